// Typed mixed precision under AxoNN 3D tensor parallelism (bin/tensor3d) against the emulation it
// replaces, on every rank count bin/mpi_tests runs with: the ranks along each axis in turn (with
// depth: weights gathered and dW reduce-scattered; every overlap option), and replicas, the same
// loss curve and final weights bit for bit, in less memory, with the same traffic (16-bit
// weights and activations as they are; fp32 dW blocks, statistics and gradients on the 16-bit
// wire).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/schemes/tensor3d/tensor3d_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"
#include "tests/mpi/typed_equivalence.h"

namespace mlps {
namespace {

using namespace testing;  // typed_equivalence.h and MpiTest

struct Variant {
  std::string what;
  Tensor3dGrid shape;
  Overlap3d overlap;
  bool checkpoint = false;
};

// Five steps of `variant`, typed against the emulation. H 24, F 48, 36 inputs and 12 rows per
// step divide by every axis up to 4; the 10 classes are padded.
void typed_equals_emulated(const Variant& variant) {
  ModelConfig model = model_shape(6, 24, 2, 2);
  model.checkpoint_activations = variant.checkpoint;
  expect_five_steps_typed_equal_emulated(model, 24, variant.what, [&](auto zero, auto setup) {
    return std::make_unique<Tensor3dTrainer<decltype(zero)>>(setup, variant.shape,
                                                             variant.overlap);
  });
}

TEST_F(MpiTest, TypedTensor3dEqualsTheEmulationBitForBit) {
  const int n = testing::world_size();
  const std::string ranks = std::to_string(n);
  Overlap3d all;
  all.overlap_dx = all.defer_dw_reduce = all.prefetch_weights = true;
  Overlap3d cached;
  cached.cache_weights = true;
  std::vector<Variant> variants{
      {"outer " + ranks, Tensor3dGrid{n, 1, 1, 1}, Overlap3d{}},
      {"inner " + ranks, Tensor3dGrid{1, n, 1, 1}, Overlap3d{}},
      {"depth " + ranks, Tensor3dGrid{1, 1, n, 1}, Overlap3d{}},
      {"depth " + ranks + ", every overlap", Tensor3dGrid{1, 1, n, 1}, all},
      {"depth " + ranks + ", cached weights, checkpointing", Tensor3dGrid{1, 1, n, 1}, cached, true},
      {ranks + " replicas", Tensor3dGrid{1, 1, 1, n}, Overlap3d{}}};
  if (n == 4) variants.push_back({"2 x 1 x 2", Tensor3dGrid{2, 1, 2, 1}, all});
  for (const Variant& v : variants) typed_equals_emulated(v);
}

}  // namespace
}  // namespace mlps
