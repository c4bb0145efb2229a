// Typed mixed precision under pipeline parallelism against the emulation it replaces, on every
// rank count bin/mpi_tests runs with: under each schedule (and with replicas and checkpointing)
// the same loss curve and the same final weights, bit for bit, in less memory, with the same
// traffic (activations and their gradients as 2 bytes each, as the emulation's wire sends them).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/data/batch_loader.h"
#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/schemes/pipeline_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"

namespace mlps {
namespace {

using testing::MpiTest;

constexpr int64_t kBatch = 24;

struct Variant {
  std::string what;
  PipelineOptions options;
  bool checkpoint = false;
};

struct Trained {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;  // rank 0's
  size_t peak_bytes = 0;
  std::string storage;
  std::map<std::string, CommTotals> comm;  // the last step's
};

// Five Adam steps of `variant` over all ranks on T (float: the emulation of `storage`;
// bf16/fp16: typed), on 8 blocks so that every schedule fits 4 stages.
template <typename T>
Trained train(const Variant& variant, StorageFormat storage) {
  TrainerSetup setup;
  setup.device = DeviceConfig(DeviceKind::cpu, storage);
  setup.model = model_shape(6, 16, 8, 2);
  setup.model.checkpoint_activations = variant.checkpoint;
  setup.optimizer.kind = OptimizerKind::adam;
  setup.optimizer.lr = 1e-3;
  setup.seed = 7;
  setup.global_batch = kBatch;
  const PipelineLayout layout =
      resolve_pipeline_layout(variant.options, setup.model, kBatch, testing::world_size());
  PipelineTrainer<T> trainer(setup, layout);
  PhaseTimer timer(trainer.device());
  const auto data = open_dataset("synthetic", 7);
  const auto order = epoch_order(data->size(Split::train), 7, 0);
  const BatchSlice slice = trainer.batch_slice(kBatch);
  Trained out;
  for (int64_t it = 0; it < 5; ++it) {
    timer.begin_iteration();
    const HostBatch rows = load_batch(*data, Split::train, order, it * kBatch + slice.first,
                                      slice.count, static_cast<int>(setup.model.image_size));
    out.losses.push_back(trainer.train_step(rows, kBatch, timer));
    timer.end_iteration();
    out.comm = trainer.take_comm_totals();
  }
  out.parameters = trainer.gather_parameters();
  out.peak_bytes = trainer.device().peak_bytes();
  out.storage = trainer.storage();
  return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

template <typename S>
void typed_equals_emulated(const Variant& variant) {
  const StorageFormat format = format_of<S>();
  const std::string what = variant.what + (format == StorageFormat::bf16 ? " bf16" : " fp16");
  const Trained emulated = train<float>(variant, format);
  const Trained typed = train<S>(variant, format);
  EXPECT_EQ(emulated.storage, "emulated");
  EXPECT_EQ(typed.storage, "typed");
  EXPECT_TRUE(same_bits(typed.losses, emulated.losses)) << what << ": loss curves differ";
  ASSERT_EQ(typed.parameters.size(), emulated.parameters.size()) << what;
  for (size_t t = 0; t < typed.parameters.size(); ++t)
    EXPECT_TRUE(same_bits(typed.parameters[t].values, emulated.parameters[t].values))
        << what << ": final " << typed.parameters[t].name << " differs";
  EXPECT_LT(typed.peak_bytes, emulated.peak_bytes) << what;
  ASSERT_EQ(typed.comm.size(), emulated.comm.size()) << what;
  for (const auto& [kind, totals] : emulated.comm) {
    EXPECT_EQ(typed.comm.at(kind).bytes, totals.bytes) << what << ": " << kind;
    EXPECT_EQ(typed.comm.at(kind).calls, totals.calls) << what << ": " << kind;
  }
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
  for (const Variant& v : variants) {
    typed_equals_emulated<bf16>(v);
    typed_equals_emulated<fp16>(v);
  }
}

}  // namespace
}  // namespace mlps
