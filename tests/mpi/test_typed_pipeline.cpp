// Typed mixed precision under pipeline parallelism against the emulation it replaces, on every
// rank count bin/mpi_tests runs with: under each schedule (and with replicas and checkpointing)
// the same loss curve and the same final weights, bit for bit, in less memory, with the same
// traffic (activations and their gradients as 2 bytes each, as the emulation's wire sends them).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/schemes/pipeline/pipeline_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"
#include "tests/mpi/typed_equivalence.h"

namespace mlps {
namespace {

using namespace testing;  // typed_equivalence.h and MpiTest

struct Variant {
  std::string what;
  PipelineOptions options;
  bool checkpoint = false;
};

// Five steps of `variant` over all ranks, typed against the emulation, on 8 blocks so that every
// schedule fits 4 stages.
void typed_equals_emulated(const Variant& variant) {
  constexpr int64_t kBatch = 24;
  ModelConfig model = model_shape(6, 16, 8, 2);
  model.checkpoint_activations = variant.checkpoint;
  const PipelineGrid grid =
      resolve_pipeline_grid(variant.options, model, kBatch, testing::world_size());
  expect_five_steps_typed_equal_emulated(model, kBatch, variant.what, [&](auto zero, auto setup) {
    return std::make_unique<PipelineTrainer<decltype(zero)>>(setup, grid);
  });
}

TEST_F(MpiTest, TypedPipelineEqualsTheEmulationBitForBit) {
  const int ranks = testing::world_size();
  // One stage per rank, M = P micro-batches (interleaved needs a multiple of P).
  auto stages = [&](const std::string& schedule, int virtual_stages = 1) {
    PipelineOptions o;
    o.pp = ranks;
    o.dp = 1;
    o.micro_batches = ranks;
    o.schedule = schedule;
    o.virtual_stages = virtual_stages;
    return o;
  };
  std::vector<Variant> variants{{"gpipe", stages("gpipe")},
                                {"1f1b", stages("1f1b")},
                                {"interleaved", stages("interleaved", 2)},
                                {"zb-h1", stages("zb-h1")},
                                {"zb-v", stages("zb-v")},
                                {"zb-h1, checkpointing", stages("zb-h1"), true}};
  if (ranks % 2 == 0) {  // replicas all-reduce their fp32 gradients on the 16-bit wire
    PipelineOptions o = stages("1f1b");
    o.pp = ranks / 2;
    o.dp = 2;
    o.micro_batches = 2;
    variants.push_back({"1f1b, 2 replicas", o});
  }
  for (const Variant& v : variants) typed_equals_emulated(v);
}

}  // namespace
}  // namespace mlps
