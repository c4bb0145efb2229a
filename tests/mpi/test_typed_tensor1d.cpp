// Typed mixed precision under Megatron tensor parallelism (bin/tensor1d) against the emulation it
// replaces, on every rank count bin/mpi_tests runs with: with and without sequence parallelism,
// with replicas, checkpointing and plain blocks, the same loss curve and final weights bit for
// bit, in less memory, with the same traffic (16-bit activations and their gradients on "tp" as
// they are, fp32 gradients on the 16-bit wire).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/schemes/tensor1d/tensor1d_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"
#include "tests/mpi/typed_equivalence.h"

namespace mlps {
namespace {

using namespace testing;  // typed_equivalence.h and MpiTest

struct Variant {
  std::string what;
  int tp = 1;
  bool sequence_parallel = false;
  bool checkpoint = false;
  BlockKind block = BlockKind::residual_mlp;
};

// Five steps of `variant` over all ranks (tp × the rest as replicas), typed against the
// emulation. 36 input features, H 24, F 48 and 10 classes: the embed is row-split at every T up
// to 4, the logits are split at T = 2.
void typed_equals_emulated(const Variant& variant) {
  ModelConfig model = model_shape(6, 24, 2, 2, variant.block);
  model.checkpoint_activations = variant.checkpoint;
  const Tensor1dGrid grid = make_tensor1d_grid(model, variant.tp, variant.sequence_parallel);
  const int replicas = testing::world_size() / variant.tp;
  expect_five_steps_typed_equal_emulated(model, 12, variant.what, [&](auto zero, auto setup) {
    return std::make_unique<Tensor1dTrainer<decltype(zero)>>(setup, grid, replicas);
  });
}

TEST_F(MpiTest, TypedTensor1dEqualsTheEmulationBitForBit) {
  const int ranks = testing::world_size();
  std::vector<Variant> variants{
      {"tp " + std::to_string(ranks), ranks},
      {"tp " + std::to_string(ranks) + ", sequence parallel", ranks, true},
      {"tp " + std::to_string(ranks) + ", sequence parallel, checkpointing", ranks, true, true},
      {"tp " + std::to_string(ranks) + ", plain blocks", ranks, false, false, BlockKind::plain}};
  if (ranks % 2 == 0)  // replicas all-reduce their fp32 gradients on the 16-bit wire
    variants.push_back({"tp " + std::to_string(ranks / 2) + " x 2 replicas", ranks / 2});
  for (const Variant& v : variants) typed_equals_emulated(v);
}

}  // namespace
}  // namespace mlps
