// Typed mixed precision under SUMMA tensor parallelism (bin/tensor2d) against the emulation it
// replaces, on every rank count bin/mpi_tests runs with: a 2 × 2 grid (4 ranks; even and uneven
// splits, with checkpointing) and 1 × 1 grids as replicas, the same loss curve and final weights
// bit for bit, in less memory, with the same traffic (16-bit blocks broadcast and dX partials
// reduced as they are; fp32 dW partials, LayerNorm statistics and gradients on the 16-bit wire).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/schemes/tensor2d/tensor2d_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"
#include "tests/mpi/typed_equivalence.h"

namespace mlps {
namespace {

using namespace testing;  // typed_equivalence.h and MpiTest

struct Variant {
  std::string what;
  Tensor2dGrid shape;
  int64_t hidden = 24;
  bool checkpoint = false;
};

// Five steps of `variant`, typed against the emulation.
void typed_equals_emulated(const Variant& variant) {
  ModelConfig model = model_shape(6, variant.hidden, 2, 2);
  model.checkpoint_activations = variant.checkpoint;
  expect_five_steps_typed_equal_emulated(model, 12, variant.what, [&](auto zero, auto setup) {
    return std::make_unique<Tensor2dTrainer<decltype(zero)>>(setup, variant.shape);
  });
}

TEST_F(MpiTest, TypedTensor2dEqualsTheEmulationBitForBit) {
  const int ranks = testing::world_size();
  std::vector<Variant> variants{{"1 x 1 grids, " + std::to_string(ranks) + " replicas",
                                 Tensor2dGrid{1, ranks}}};
  if (ranks == 4) {
    variants.push_back({"2 x 2 grid", Tensor2dGrid{2, 1}});
    // H 15 and F 30 split 8 + 7 and 15 + 15: unequal LayerNorm slices, padded reduce-scatters.
    variants.push_back({"2 x 2 grid, uneven splits", Tensor2dGrid{2, 1}, 15});
    variants.push_back({"2 x 2 grid, checkpointing", Tensor2dGrid{2, 1}, 24, true});
  }
  for (const Variant& v : variants) typed_equals_emulated(v);
}

}  // namespace
}  // namespace mlps
