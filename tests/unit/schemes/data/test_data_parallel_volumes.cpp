// bin/data's analytic volumes (src/schemes/data/data_volumes.h) against hand counts on a
// small model; data_parallel_tests.sh checks them against every run's measured bytes.
#include <gtest/gtest.h>

#include "src/schemes/data/data_volumes.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

DataGrid stage(int zero, int group = 0) {
  DataGrid config;
  config.zero = zero;
  config.shard_group = group;
  config.bucket_mb = 1;
  return config;
}

// S 4, H 6, one residual block of F 12: units embed 16·6 + 6, block 2·6 + 72 + 12 + 72 + 6,
// classifier 6·10 + 10.
const ModelConfig model = model_shape(4, 6, 1, 2);
constexpr double embed = 102, block = 174, classifier = 70;
constexpr double all = embed + block + classifier;

TEST(DataParallelVolumes, DdpAllReducesEveryGradientOnceAndNothingInInference) {
  const auto bytes = data_comm_bytes(model, stage(0), 4, 8, 8);
  EXPECT_EQ(bytes, (std::map<std::string, double>{{"allreduce", 8 * all}}));
  EXPECT_TRUE(data_comm_bytes(model, stage(0), 4, 8, 8, true).empty());
}

TEST(DataParallelVolumes, ZeroOneAndTwoMoveTheBucketPaddedToTheRanksBothWays) {
  // 1 MiB buckets hold the whole model: one bucket of 346 elements, padded to 348 for 4 ranks.
  for (int zero : {1, 2}) {
    const auto bytes = data_comm_bytes(model, stage(zero), 4, 8, 2);
    EXPECT_EQ(bytes.at("reduce_scatter"), 2 * 348.0);
    EXPECT_EQ(bytes.at("allgather"), 2 * 348.0);
  }
}

TEST(DataParallelVolumes, ZeroThreeGathersEachPaddedUnitTwiceAndHybridShardingAddsTheShard) {
  // Units padded to 4: 104, 176, 72.
  const auto plain = data_comm_bytes(model, stage(3, 4), 4, 8, 8);
  EXPECT_EQ(plain, (std::map<std::string, double>{{"allgather", 8 * 2 * 352.0},
                                                  {"reduce_scatter", 8 * 352.0}}));
  EXPECT_EQ(data_comm_bytes(model, stage(3, 4), 4, 8, 8, true),
            (std::map<std::string, double>{{"allgather", 8 * 352.0}}));
  // G = 2: units padded to 2 (no change), the shard's half all-reduced across the 2 groups.
  const auto hybrid = data_comm_bytes(model, stage(3, 2), 4, 8, 8);
  EXPECT_EQ(hybrid, (std::map<std::string, double>{{"allgather:shard", 8 * 2 * all},
                                                   {"reduce_scatter:shard", 8 * all},
                                                   {"allreduce:data", 8 * all / 2}}));
  // G = 1: DDP's volume, on the communicator of all ranks.
  EXPECT_EQ(data_comm_bytes(model, stage(3, 1), 4, 8, 8),
            data_comm_bytes(model, stage(0), 4, 8, 8));
}

TEST(DataParallelVolumes, TypedValuesAreGatheredAtTheirOwnSizeWhateverTheGradientsWire) {
  // Typed bf16 with fp32 gradients on the wire (--fp32-grad-comm): values gathered at 2 bytes.
  EXPECT_EQ(data_comm_bytes(model, stage(3, 4), 4, 4, 4, false, nullptr, 2),
            (std::map<std::string, double>{{"allgather", 2 * 2 * 352.0},
                                           {"reduce_scatter", 4 * 352.0}}));
  EXPECT_EQ(data_comm_bytes(model, stage(3, 2), 4, 4, 4, false, nullptr, 2).at("allgather:shard"),
            2 * 2 * all);
  EXPECT_EQ(data_comm_bytes(model, stage(1), 4, 4, 4, false, nullptr, 2),
            (std::map<std::string, double>{{"allgather", 2 * 348.0},
                                           {"reduce_scatter", 4 * 348.0}}));
}

TEST(DataParallelVolumes, CallsAreOnePerBucketAndZeroThreesOnePerUnitAndPass) {
  // The model fits the first 1 MiB bucket: one of each; ZeRO-3: 3 units, gathered in forward
  // and backward, reduced once (hybrid: the shard's all-reduce per unit too).
  CommCalls ddp, zero1, zero3, hybrid, forward;
  data_comm_bytes(model, stage(0), 4, 8, 8, false, &ddp);
  EXPECT_EQ(ddp, (CommCalls{{"allreduce", 1}}));
  data_comm_bytes(model, stage(1), 4, 8, 8, false, &zero1);
  EXPECT_EQ(zero1, (CommCalls{{"allgather", 1}, {"reduce_scatter", 1}}));
  data_comm_bytes(model, stage(3, 4), 4, 8, 8, false, &zero3);
  EXPECT_EQ(zero3, (CommCalls{{"allgather", 6}, {"reduce_scatter", 3}}));
  data_comm_bytes(model, stage(3, 2), 4, 8, 8, false, &hybrid);
  EXPECT_EQ(hybrid,
            (CommCalls{{"allgather:shard", 6}, {"reduce_scatter:shard", 3}, {"allreduce:data", 3}}));
  data_comm_bytes(model, stage(3, 4), 4, 8, 8, true, &forward);
  EXPECT_EQ(forward, (CommCalls{{"allgather", 3}}));
}

}  // namespace
}  // namespace mlps
