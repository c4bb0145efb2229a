// Typed mixed precision under data parallelism (ZeRO 0-3) against the emulation it replaces, on
// every rank count bin/mpi_tests runs with: the same loss curve and the same final weights, bit
// for bit, in less memory; 16-bit values all-gathered as 2 bytes each, as the emulation's wire
// sends them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/data/batch_loader.h"
#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/schemes/data_parallel_trainer.h"
#include "src/schemes/fully_sharded_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"

namespace mlps {
namespace {

using testing::MpiTest;

struct Trained {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;  // rank 0's
  size_t peak_bytes = 0;
  std::string storage;
  std::map<std::string, CommTotals> comm;  // the last step's
};

// Five steps of `zero` over all ranks on T (float: the emulation of `storage`; bf16/fp16: typed),
// with buckets small enough that the model spans several; ZeRO-3 shards within groups of
// `shard_group` ranks (0: all).
template <typename T>
Trained train(int zero, StorageFormat storage, OptimizerKind kind, int shard_group = 0) {
  constexpr int64_t kBatch = 12;
  TrainerSetup setup;
  setup.device = DeviceConfig(DeviceKind::cpu, storage);
  setup.model = model_shape(6, 16, 2, 2);
  setup.optimizer.kind = kind;
  setup.optimizer.lr = kind == OptimizerKind::sgd ? 0.05 : 1e-3;
  setup.seed = 7;
  setup.global_batch = kBatch;
  DataParallelConfig config;
  config.zero = zero;
  config.bucket_mb = 0.002;  // 2 KiB of fp32 gradients
  config.shard_group = shard_group;
  resolve_shard_group(config, testing::world_size());
  std::unique_ptr<DataParallelBase<T>> made;
  if (zero == 3)
    made = std::make_unique<FullyShardedTrainer<T>>(setup, config);
  else
    made = std::make_unique<DataParallelTrainer<T>>(setup, config);
  DataParallelBase<T>& trainer = *made;
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
void typed_equals_emulated(int zero, OptimizerKind kind, const std::string& what,
                           int shard_group = 0) {
  const StorageFormat format = format_of<S>();
  const Trained emulated = train<float>(zero, format, kind, shard_group);
  const Trained typed = train<S>(zero, format, kind, shard_group);
  EXPECT_EQ(emulated.storage, "emulated");
  EXPECT_EQ(typed.storage, "typed");
  EXPECT_TRUE(same_bits(typed.losses, emulated.losses)) << what << ": loss curves differ";
  ASSERT_EQ(typed.parameters.size(), emulated.parameters.size()) << what;
  for (size_t t = 0; t < typed.parameters.size(); ++t)
    EXPECT_TRUE(same_bits(typed.parameters[t].values, emulated.parameters[t].values))
        << what << ": final " << typed.parameters[t].name << " differs";
  EXPECT_LT(typed.peak_bytes, emulated.peak_bytes) << what;
  // The same traffic: fp32 gradients on the 16-bit wire, typed values gathered as they are.
  ASSERT_EQ(typed.comm.size(), emulated.comm.size()) << what;
  for (const auto& [kind_name, totals] : emulated.comm) {
    EXPECT_EQ(typed.comm.at(kind_name).bytes, totals.bytes) << what << ": " << kind_name;
    EXPECT_EQ(typed.comm.at(kind_name).calls, totals.calls) << what << ": " << kind_name;
  }
}

TEST_F(MpiTest, TypedDataParallelEqualsTheEmulationBitForBit) {
  for (int zero : {0, 1, 2, 3}) {
    const std::string z = "zero " + std::to_string(zero);
    typed_equals_emulated<bf16>(zero, OptimizerKind::adam, z + " bf16 adam");
    typed_equals_emulated<fp16>(zero, OptimizerKind::adam, z + " fp16 adam (loss scaling)");
  }
  typed_equals_emulated<bf16>(1, OptimizerKind::sgd, "zero 1 bf16 sgd");
  // Hybrid sharding with groups of one rank: whole units in place, shards all-reduced.
  typed_equals_emulated<bf16>(3, OptimizerKind::adam, "zero 3, shard group 1, bf16 adam", 1);
}

}  // namespace
}  // namespace mlps
