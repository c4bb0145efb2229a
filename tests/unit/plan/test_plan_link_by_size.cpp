// bin/plan's link at each message size: a busbw table by size (MPI on CPU cores moves a message
// that stays in cache faster than one that streams from memory), calibrated from bench_comm's
// sweep without the dips of a slow size, and refused by name when malformed; DDP's buckets each
// at their own size where they move during compute, else together as one message of their
// total; and as many latency terms as the runs make calls.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/base/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/machine_description.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "src/schemes/data/gradient_bucketer.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

LinkModel link_by_size() {
  LinkModel link;
  link.latency_seconds = 1e-6;
  link.bus_bandwidth = 1e9;
  link.bandwidth_bytes_fraction = {{1e3, 0.01}, {1e6, 2.0}, {1e8, 1.0}};
  return link;
}

TEST(PlanLink, EachMessageSizeMovesAtItsOwnBusBandwidth) {
  const LinkModel link = link_by_size();
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_reduce, 2, 1e6), 1e6 / 2e9);  // a table size
  // Between sizes: the fraction interpolated in log(bytes), 1e7 halfway from 1e6 to 1e8.
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_gather, 4, 1e7), 0.75 * 1e7 / 1.5e9);
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_reduce, 2, 1e9), 1.0);  // the last size's beyond
  // The measured times hold each size's latency: it is a floor, not added.
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_reduce, 4, 10), 6e-6);
  EXPECT_EQ(link.seconds(CommKind::all_reduce, 1, 1e6), 0);
  LinkModel flat = link;  // no table: latency per ring step plus the bytes at bus_bandwidth
  flat.bandwidth_bytes_fraction.clear();
  EXPECT_DOUBLE_EQ(flat.seconds(CommKind::all_reduce, 2, 1e6), 2e-6 + 1e-3);
}

TEST(PlanLink, EachDdpBucketMovesAtItsOwnSizesBusBandwidth) {
  Options o = small_options();
  o.model.hidden = 256;  // 8.7 MB of fp32 gradients: a 1 MiB first bucket, then one of 7.6 MB
  o.model.image_size = 16;
  const auto all = enumerate_candidates(o, 2, {Precision::fp32});
  const PlanCandidate* ddp = find(all, "data --zero 0 --precision fp32");
  ASSERT_NE(ddp, nullptr);
  MachineDescription m = test_machine(8);
  m.intra_node = link_by_size();
  const StepPrediction p = predict_step(*ddp, m);
  const GradientBucketer buckets = ddp_buckets(parameter_tensor_sizes(o.model), 25, 4, 1);
  ASSERT_EQ(buckets.buckets().size(), 2u);
  double each = 0;
  for (const GradientBucket& b : buckets.buckets())
    each += m.intra_node.seconds(CommKind::all_reduce, 2, 4.0 * static_cast<double>(b.count));
  const PredictedComm& allreduce = p.collectives.at("allreduce");
  EXPECT_DOUBLE_EQ(allreduce.bytes, 4.0 * static_cast<double>(parameter_count(o.model)));
  EXPECT_DOUBLE_EQ(allreduce.seconds, each);
  // Not two calls of the average size: the large bucket moves at the slower busbw of its size.
  EXPECT_GT(allreduce.seconds,
            1.03 * 2 * m.intra_node.seconds(CommKind::all_reduce, 2, allreduce.bytes / 2));
  // Where nothing moves during compute (CPU ranks) the buckets are in flight together at the
  // end: one message of their total size.
  m.comm_overlaps_compute = false;
  const PredictedComm& together = predict_step(*ddp, m).collectives.at("allreduce");
  EXPECT_DOUBLE_EQ(together.seconds,
                   m.intra_node.seconds(CommKind::all_reduce, 2, allreduce.bytes));
  EXPECT_NE(together.seconds, each);
}

TEST(PlanLink, LatencyTermsCountTheCallsTheRunsMake) {
  // Calls per step that rank 0 of `mpiexec -n 4 bin/<scheme> ... --hidden 64 --layers 4
  // --image-size 8 --batch 32` logs (its closing volume table) for the small model.
  const MachineDescription m = test_machine(8);
  const std::map<std::string, CommCalls> runs = {
      {"tensor1d --tp 4 --precision fp32", {{"allreduce:tp", 9}}},
      {"tensor2d --tp-dims 2,2 --precision fp32",
       {{"allgather:row", 5}, {"allreduce:col", 6}, {"allreduce:row", 4}, {"broadcast:col", 38},
        {"broadcast:row", 40}, {"reduce_scatter:col", 10}, {"reduce_scatter:row", 9}}},
      {"tensor3d --tp-dims 2,1,2 --precision fp32",
       {{"allgather:depth", 20}, {"allgather:outer", 1}, {"allreduce:depth", 1},
        {"allreduce:outer", 10}, {"reduce_scatter:depth", 10}}}};
  for (const auto& [label, calls] : runs) {
    CommCalls predicted;
    for (const auto& [key, comm] : predict(label, 4, m).collectives) predicted[key] = comm.calls;
    EXPECT_EQ(predicted, calls) << label;
  }
}

TEST(LinkCalibration, ASlowSizeTakesTheTimeOfTheFirstFasterLargerOne) {
  // All-reduce on 2 ranks (bus factor 1): 1 MiB in 0.5 ms, 2 MiB in 2 ms (preempted), 4 MiB in
  // 1.6 ms; busbw in GB/s is bytes / time.
  const std::vector<int64_t> bytes = {8, 1 << 20, 2 << 20, 4 << 20};
  const std::vector<double> seconds = {4e-6, 5e-4, 2e-3, 1.6e-3};
  std::vector<double> busbw;
  for (size_t i = 0; i < bytes.size(); ++i) busbw.push_back(bytes[i] / seconds[i] / 1e9);
  const nlohmann::json t = bandwidth_by_size(
      {"allreduce", bytes, {2, 262144, 524288, 1048576}, seconds, busbw, busbw, {0, 0, 0, 0}},
      "test: ");
  ASSERT_EQ(t["bytes"].size(), 4u);
  EXPECT_EQ(t["bytes"][1].get<int64_t>(), 1 << 20);
  EXPECT_DOUBLE_EQ(t["fraction"][3].get<double>(), 1.0);  // the largest: bus_bandwidth itself
  EXPECT_DOUBLE_EQ(t["fraction"][2].get<double>(), 0.5);  // 2 MiB in 4 MiB's 1.6 ms
  EXPECT_DOUBLE_EQ(t["fraction"][1].get<double>(), 0.8);  // its own 0.5 ms
  EXPECT_DOUBLE_EQ(t["fraction"][0].get<double>(), busbw[0] / busbw[3]);
  EXPECT_EQ(t["source"].get<std::string>().rfind("test: ", 0), 0u);
}

class LinkTableFile : public TempDirTest {
 protected:
  LinkTableFile() : TempDirTest("mlpscale_link_") {}
  // A description whose intra-node link carries `table` as its bandwidth_bytes_fraction.
  std::string write(const std::string& table) {
    const std::string figure = R"({"value": 1e9, "source": "datasheet"})";
    const std::string link =
        R"({"latency_seconds": )" + figure + R"(, "bus_bandwidth": )" + figure;
    const std::string path = (dir_ / "machine.json").string();
    std::ofstream(path) << R"({"name": "m", "ranks_per_node": 2, "ranks_share_node": true,
        "comm_overlaps_compute": false, "memory_bytes": )" + figure +
                               R"(, "gemm_fp32_flops": )" + figure + R"(, "gemm_fp64_flops": )" +
                               figure + R"(, "memory_bandwidth": )" + figure +
                               R"(, "intra_node": )" + link + R"(, "bandwidth_bytes_fraction": )" +
                               table + R"(}, "inter_node": )" + link + "}}";
    return path;
  }
  // What loading it says: "accepted", or the refusal's line.
  std::string refusal(const std::string& table) {
    try {
      load_machine_description(write(table));
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  }
};

TEST_F(LinkTableFile, ATableIsReadAndAMalformedOneRefusedByName) {
  const MachineDescription m = load_machine_description(
      write(R"({"bytes": [8, 1024], "fraction": [0.1, 1], "source": "bench_comm"})"));
  ASSERT_EQ(m.intra_node.bandwidth_bytes_fraction.size(), 2u);
  EXPECT_DOUBLE_EQ(m.intra_node.bandwidth_bytes_fraction[0].second, 0.1);
  EXPECT_TRUE(m.inter_node.bandwidth_bytes_fraction.empty());  // optional
  for (const char* table :
       {R"({"bytes": [1024, 8], "fraction": [1, 0.1], "source": "bench_comm"})",  // descending
        R"({"bytes": [8], "fraction": [0], "source": "bench_comm"})",              // not positive
        R"({"bytes": [8, 16], "fraction": [1], "source": "bench_comm"})",          // counts differ
        R"({"bytes": [8], "fraction": [1]})"})                                      // no source
    EXPECT_NE(refusal(table).find("intra_node.bandwidth_bytes_fraction"), std::string::npos)
        << table;
}

}  // namespace
}  // namespace mlps
