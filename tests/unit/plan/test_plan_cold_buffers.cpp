// bin/plan's cold collectives: where nothing moves while a rank computes (MPI on CPU cores), a
// collective started before compute and waited for after it (ZeRO-3's units with overlap) moves
// buffers that have left the caches, at the link's cold fraction, calibrated from bench_comm
// --evict-bytes against the sweep in cache.
#include <gtest/gtest.h>

#include <string>

#include "src/base/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "src/schemes/data/data_grid.h"
#include "tests/plan_test_inputs.h"

namespace mlps {
namespace {

CommBenchSweep allreduce_sweep(const std::vector<int64_t>& bytes,
                               const std::vector<double>& busbw) {
  std::vector<double> seconds;
  for (size_t i = 0; i < bytes.size(); ++i) seconds.push_back(bytes[i] / busbw[i] / 1e9);
  return {"allreduce", bytes, bytes, seconds, busbw, busbw, std::vector<int64_t>(bytes.size())};
}

TEST(LinkCalibration, ColdFractionIsEachSizesColdBusbwOverItsHotOneAtMostOne) {
  const CommBenchSweep hot = allreduce_sweep({1 << 20, 2 << 20, 4 << 20}, {2, 4, 4});
  const CommBenchSweep cold = allreduce_sweep({2 << 20, 4 << 20, 8 << 20}, {2, 5, 1});
  const nlohmann::json t = cold_fraction_by_size(hot, cold, "test: ");
  ASSERT_EQ(t["bytes"].size(), 2u);  // the sizes both sweeps timed
  EXPECT_EQ(t["bytes"][0].get<int64_t>(), 2 << 20);
  EXPECT_DOUBLE_EQ(t["fraction"][0].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t["fraction"][1].get<double>(), 1.0);  // faster cold is noise: at most 1
  EXPECT_THROW(cold_fraction_by_size(hot, allreduce_sweep({8 << 20}, {1}), "test: "),
               InputError);
}

TEST(PlanLink, ACollectiveSpanningComputeMovesColdBuffersWhereNothingProgresses) {
  MachineDescription hot = test_machine(8);
  hot.comm_overlaps_compute = false;
  hot.intra_node.latency_seconds = 0;  // transfers only: cold takes exactly twice as long
  MachineDescription cold = hot;
  cold.intra_node.cold_bytes_fraction = {{1, 0.5}};
  const auto all = enumerate_candidates(small_options(), 4, {Precision::fp32});
  for (const std::string zero : {"0", "1", "2", "3"}) {
    PlanCandidate c = *find(all, "data --zero " + zero + " --precision fp32");
    const StepPrediction in_cache = predict_step(c, hot), evicted = predict_step(c, cold);
    ASSERT_FALSE(in_cache.collectives.empty()) << zero;
    for (const auto& [key, comm] : in_cache.collectives) {
      // ZeRO-3's units gathered ahead and reduced behind span compute; DDP's and ZeRO-1/2's
      // buckets all move at the end of backward, their gathers after the optimizer.
      const double times = zero == "3" ? 2 : 1;
      EXPECT_DOUBLE_EQ(evicted.collectives.at(key).seconds, times * comm.seconds)
          << "--zero " << zero << ", " << key;
    }
    c.grid_as<DataGrid>().overlap = false;  // each collective waited for where it is started
    EXPECT_DOUBLE_EQ(predict_step(c, cold).comm, predict_step(c, hot).comm) << zero;
  }
  // Where collectives progress during compute (NCCL on its stream), nothing goes cold.
  MachineDescription overlapping_hot = hot, overlapping_cold = cold;
  overlapping_hot.comm_overlaps_compute = overlapping_cold.comm_overlaps_compute = true;
  const std::string zero3 = "data --zero 3 --precision fp32";
  EXPECT_DOUBLE_EQ(predict(zero3, 4, overlapping_cold).comm,
                   predict(zero3, 4, overlapping_hot).comm);
  // Nor do the other schemes' collectives, waited for where they are started.
  const std::string tp = "tensor1d --tp 4 --precision fp32";
  EXPECT_DOUBLE_EQ(predict(tp, 4, cold).comm, predict(tp, 4, hot).comm);
}

}  // namespace
}  // namespace mlps
