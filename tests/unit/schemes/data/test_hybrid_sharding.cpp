// bin/data's hybrid sharding without MPI: --shard-group's checks, the grid text, and the memory
// estimate (shards of 1/G; with G = 1 on several ranks no gathered units). Its training and
// volumes run under mpiexec in tests/data_parallel_tests.sh.
#include <gtest/gtest.h>

#include "src/base/errors.h"
#include "src/schemes/data/data_memory.h"
#include "src/schemes/data/data_grid.h"

namespace mlps {
namespace {

DataGrid zero3(int group) {
  DataGrid config;
  config.zero = 3;
  config.shard_group = group;
  return config;
}

TEST(HybridSharding, AbsentGroupIsAllRanksAndGridTextNamesOnlyAPartialGroup) {
  DataGrid config = zero3(0);
  resolve_shard_group(config, 4);
  EXPECT_EQ(config.shard_group, 4);
  EXPECT_EQ(data_grid_text(4, config), "dp=4,zero=3");
  config = zero3(2);
  resolve_shard_group(config, 4);
  EXPECT_EQ(data_grid_text(4, config), "dp=4,zero=3,shard-group=2");
  config.zero = 1;
  config.shard_group = 0;
  resolve_shard_group(config, 4);  // plain ZeRO-1: one group of all ranks
  EXPECT_EQ(data_grid_text(4, config), "dp=4,zero=1");
}

TEST(HybridSharding, GroupMustDivideTheRanksAndNeedsZero3) {
  DataGrid config = zero3(3);
  EXPECT_THROW(resolve_shard_group(config, 4), InputError);
  config = zero3(8);
  EXPECT_THROW(resolve_shard_group(config, 4), InputError);
  for (int zero : {0, 1, 2}) {
    config = zero3(2);
    config.zero = zero;
    EXPECT_THROW(resolve_shard_group(config, 4), InputError);
  }
}

TEST(HybridSharding, MemoryShardsByTheGroup) {
  const Options o;
  const MemoryNeed plain = data_memory(o, 4, zero3(0));
  EXPECT_DOUBLE_EQ(data_memory(o, 4, zero3(4)).total(), plain.total());
  const MemoryNeed pairs = data_memory(o, 4, zero3(2));
  EXPECT_DOUBLE_EQ(pairs.parameters, 2 * plain.parameters);
  EXPECT_DOUBLE_EQ(pairs.gradients, 2 * plain.gradients);
  EXPECT_DOUBLE_EQ(pairs.optimizer, 2 * plain.optimizer);
  EXPECT_DOUBLE_EQ(pairs.buffers, plain.buffers);  // the same units are gathered
  EXPECT_DOUBLE_EQ(pairs.activations, plain.activations);
  const MemoryNeed alone = data_memory(o, 4, zero3(1));
  EXPECT_DOUBLE_EQ(alone.parameters, 4 * plain.parameters);
  EXPECT_DOUBLE_EQ(alone.buffers, 0);  // whole units, used in place
  // One rank alone is plain ZeRO-3: it gathers through its communicator of one.
  EXPECT_GT(data_memory(o, 1, zero3(1)).buffers, 0);
}

}  // namespace
}  // namespace mlps
