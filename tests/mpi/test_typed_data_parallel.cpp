// Typed mixed precision under data parallelism (ZeRO 0-3) against the emulation it replaces, on
// every rank count bin/mpi_tests runs with: the same loss curve and the same final weights, bit
// for bit, in less memory; 16-bit values all-gathered as 2 bytes each, as the emulation's wire
// sends them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "kernels/half_types.h"
#include "src/schemes/data/data_parallel_trainer.h"
#include "src/schemes/data/fully_sharded_trainer.h"
#include "tests/model_shapes.h"
#include "tests/mpi/mpi_test.h"
#include "tests/mpi/typed_equivalence.h"

namespace mlps {
namespace {

using namespace testing;  // typed_equivalence.h and MpiTest

// Five steps of ZeRO `zero` over all ranks (ZeRO-3 sharding within groups of `shard_group`
// ranks, 0: all), typed S against the emulation, with buckets small enough that the model spans
// several. The same traffic: fp32 gradients on the 16-bit wire, typed values gathered as they
// are.
template <typename S>
void typed_equals_emulated(int zero, OptimizerKind kind, const std::string& what,
                           int shard_group = 0) {
  constexpr int64_t kBatch = 12;
  auto train = [&](auto zero_value, StorageFormat storage) {
    using T = decltype(zero_value);
    TrainerSetup setup = adam_setup(storage, model_shape(6, 16, 2, 2), kBatch);
    setup.optimizer.kind = kind;
    if (kind == OptimizerKind::sgd) setup.optimizer.lr = 0.05;
    DataGrid config;
    config.zero = zero;
    config.bucket_mb = 0.002;  // 2 KiB of fp32 gradients
    config.shard_group = shard_group;
    resolve_shard_group(config, testing::world_size());
    std::unique_ptr<DataParallelBase<T>> made;
    if (zero == 3)
      made = std::make_unique<FullyShardedTrainer<T>>(setup, config);
    else
      made = std::make_unique<DataParallelTrainer<T>>(setup, config);
    return train_five_steps(*made, kBatch, setup.model.image_size);
  };
  expect_typed_equals_emulated<S>(train, what);
}

TEST_F(MpiTest, TypedDataParallelEqualsTheEmulationBitForBit) {
  for (int zero : {0, 1, 2, 3}) {
    const std::string z = "zero " + std::to_string(zero);
    typed_equals_emulated<bf16>(zero, OptimizerKind::adam, z + " adam");
    typed_equals_emulated<fp16>(zero, OptimizerKind::adam, z + " adam (loss scaling)");
  }
  typed_equals_emulated<bf16>(1, OptimizerKind::sgd, "zero 1 sgd");
  // Hybrid sharding with groups of one rank: whole units in place, shards all-reduced.
  typed_equals_emulated<bf16>(3, OptimizerKind::adam, "zero 3, shard group 1, adam", 1);
}

}  // namespace
}  // namespace mlps
