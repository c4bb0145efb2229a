// bin/plan's price of each rank's data loader: with --prefetch on, the samples its thread makes
// cost the step nothing while a core is idle, and their time when every core already runs a
// rank, less a pipeline's bubble (its rank waits for a message, its core free for the loader);
// with --prefetch off, their time in the step; auto, the thread only while a core is spare; and
// the calibration that measures a sample (bench_kernels' sample_load).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <tuple>
#include <vector>

#include "src/base/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

constexpr PrefetchMode on = PrefetchMode::on, off = PrefetchMode::off,
                       automatic = PrefetchMode::automatic;

Options prefetching(PrefetchMode mode) {
  Options o = small_options();
  o.prefetch = mode;
  return o;
}

MachineDescription cpu_node_of(int cores) {
  MachineDescription m = test_machine(cores);
  m.ranks_share_node = true;
  m.sample_load_seconds = 2e-5;
  return m;
}

TEST(PlanMachine, TheLoaderThreadCostsAStepOnlyWhenEveryCoreRunsARank) {
  const MachineDescription cpu = cpu_node_of(8);
  EXPECT_EQ(cpu.data_loading_seconds(64, 1, 1, on), 0.0);  // 7 idle cores
  EXPECT_EQ(cpu.data_loading_seconds(64, 4, 1, on), 0.0);  // 4 idle cores
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 8, 1, on), 64 * 2e-5);  // all busy: its own
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 8, 0, on), 64 * 2e-5);  // cores split among ranks
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 1, 0, on), 64 * 2e-5 / 8);  // one on every core
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 16, 1, on), 2 * 64 * 2e-5);  // time-shared cores
  EXPECT_DOUBLE_EQ(cpu_node_of(3).data_loading_seconds(10, 3, 0, on), 10 * 2e-5);  // 3 of 3 busy
  MachineDescription unmeasured = cpu;
  unmeasured.sample_load_seconds = 0;
  EXPECT_EQ(unmeasured.data_loading_seconds(64, 8, 1, on), 0.0);
  MachineDescription gpu = test_machine(8);  // a GPU node's host cores are free for loaders
  gpu.sample_load_seconds = 2e-5;
  EXPECT_EQ(gpu.data_loading_seconds(64, 8, 1, on), 0.0);
}

TEST(PlanStep, EachRankLoadsTheRowsItsTrainerSlicesForIt) {
  const MachineDescription cpu = cpu_node_of(4);
  const double batch = static_cast<double>(small_options().batch), sample = 2e-5;
  const std::map<std::string, double> rows = {
      {"data --zero 0 --precision fp32", batch / 4},  // its replica's quarter
      {"tensor1d --tp 4 --precision fp32", batch},    // every tensor rank the whole replica
      {"pipeline --pp 4 --micro-batches 4 --schedule 1f1b --precision fp32", batch},
      {"tensor2d --tp-dims 2,2 --precision fp32", batch / 2},  // a grid row's share
      {"tensor3d --tp-dims 1,1,4 --precision fp32", batch / 4},  // the depth axis's share
      {"tensor3d --tp-dims 4,1,1 --precision fp32", batch}};
  for (const auto& [label, loaded] : rows) {
    const StepPrediction p = predict(label, 4, cpu, prefetching(on));  // less a bubble
    EXPECT_DOUBLE_EQ(p.data_loading, std::max(0.0, loaded * sample - p.bubble)) << label;
    MachineDescription unmeasured = cpu;
    unmeasured.sample_load_seconds = 0;
    EXPECT_NEAR(p.step - predict(label, 4, unmeasured, prefetching(on)).step, p.data_loading,
                1e-12)
        << label;
  }
}

TEST(PlanStep, APipelinesBubbleLeavesItsCoreToTheLoader) {
  const std::string label = "pipeline --pp 4 --micro-batches 4 --schedule 1f1b --precision fp32";
  const double batch = static_cast<double>(small_options().batch);
  MachineDescription cpu = cpu_node_of(4);
  const StepPrediction p = predict(label, 4, cpu, prefetching(on));
  ASSERT_GT(p.bubble, 0);
  cpu.sample_load_seconds = 0.5 * p.bubble / batch;  // half the bubble's time: hidden
  EXPECT_EQ(predict(label, 4, cpu, prefetching(on)).data_loading, 0.0);
  cpu.sample_load_seconds = 3 * p.bubble / batch;  // three bubbles' time: two of them exposed
  EXPECT_NEAR(predict(label, 4, cpu, prefetching(on)).data_loading, 2 * p.bubble,
              1e-12 * p.bubble);
  // Loaded in the data phase, the samples hide in no bubble (auto: every core runs a stage).
  for (const PrefetchMode mode : {off, automatic})
    EXPECT_DOUBLE_EQ(predict(label, 4, cpu, prefetching(mode)).data_loading,
                     batch * cpu.sample_load_seconds)
        << to_string(mode);
}

TEST(PlanMachine, WithoutTheThreadARankLoadsItsOwnSamplesInItsStep) {
  const MachineDescription cpu = cpu_node_of(8);
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 1, 1, off), 64 * 2e-5);  // idle cores or not
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 8, 1, off), 64 * 2e-5);
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 16, 1, off), 2 * 64 * 2e-5);  // time-shared
  MachineDescription gpu = test_machine(8);  // the host thread loads, the GPU waits
  gpu.sample_load_seconds = 2e-5;
  EXPECT_DOUBLE_EQ(gpu.data_loading_seconds(64, 8, 1, off), 64 * 2e-5);
  EXPECT_EQ(gpu.data_loading_seconds(64, 8, 1, automatic), 0.0);  // ahead: host cores are free
}

TEST(PlanMachine, AutoLoadsAheadWhileACoreIsSpareAsTheRunsDecide) {
  const MachineDescription cpu = cpu_node_of(8);
  // ranks on the node, threads per rank (0: the executables' split), whether a core is spare
  const std::vector<std::tuple<int, int, bool>> cases = {
      {1, 1, true}, {7, 1, true}, {3, 2, true},   {8, 1, false},
      {4, 2, false}, {16, 1, false}, {1, 0, false}, {8, 0, false}};
  for (const auto& [ranks, threads, spare] : cases) {
    EXPECT_EQ(cpu.loads_ahead(automatic, ranks, threads), spare) << ranks << " x " << threads;
    // The runs' rule (scheme_main) on the same node: the ranks' compute threads against 8 cores.
    const int split = threads > 0 ? threads : 8 / ranks;
    EXPECT_EQ(loads_ahead(automatic, ranks * split, 8), spare) << ranks << " x " << threads;
    EXPECT_TRUE(cpu.loads_ahead(on, ranks, threads));
    EXPECT_FALSE(cpu.loads_ahead(off, ranks, threads));
    const double auto_seconds = cpu.data_loading_seconds(64, ranks, threads, automatic);
    EXPECT_DOUBLE_EQ(auto_seconds, cpu.data_loading_seconds(64, ranks, threads, spare ? on : off));
  }
  EXPECT_TRUE(test_machine(8).loads_ahead(automatic, 8, 0));  // GPU ranks leave the cores free
  // bin/plan's commands run what it priced: --prefetch spelled out unless auto.
  const std::string off_command =
      enumerate_candidates(prefetching(off), 2, {Precision::fp32}).front().command();
  EXPECT_NE(off_command.find(" --prefetch off"), std::string::npos) << off_command;
  const std::string auto_command =
      enumerate_candidates(small_options(), 2, {Precision::fp32}).front().command();
  EXPECT_EQ(auto_command.find("--prefetch"), std::string::npos) << auto_command;
}

class SampleLoadCalibration : public TempDirTest {
 protected:
  SampleLoadCalibration() : TempDirTest("mlpscale_sample_load_calibration_") {}
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A description calibrated from kernels that ran on `threads` threads, with a sample_load
  // entry (samples/s) when `samples_per_second` > 0, and an all-reduce on `device` ranks.
  nlohmann::json calibrate(double samples_per_second, const std::string& device) {
    std::ofstream(path("kernels.json"))
        << R"({"context": {"mlpscale_cpu_threads": "2"}, "benchmarks": [
      {"name": "gemm/)" << device << R"(/f32/NN/m:64/n:64/k:64", "run_type": "iteration",
       "real_time": 1, "TFLOP/s": 0.05},
      {"name": "gemm/)" << device << R"(/f64/NN/m:64/n:64/k:64", "run_type": "iteration",
       "real_time": 1, "TFLOP/s": 0.02},
      {"name": "copy/)" << device << R"(/f32/n:1024", "run_type": "iteration", "real_time": 1,
       "GB/s": 12})" << (samples_per_second > 0 ? R"(,
      {"name": "sample_load/host/synthetic/image:8/rows:32", "run_type": "iteration",
       "real_time": 1, "samples/s": )" + std::to_string(samples_per_second) + "}"
                                              : std::string()) << "]}";
    CommBenchRecord comm;
    comm.string_attributes = {{"backend", "mpi"}, {"device", device}, {"hosts", "node1"}};
    comm.integer_attributes = {{"ranks", 2}};
    comm.sweeps.push_back({"allreduce", {8, 1 << 20}, {2, 262144}, {6e-6, 1e-3},
                           {0.0013, 1.05}, {0.002, 1.6}, {0, 0}});
    write_comm_bench_hdf5(path("comm.h5"), comm);
    const KernelRates kernels(path("kernels.json"));
    const CommBenchRecord read = read_comm_bench_hdf5(path("comm.h5"));
    return calibrated_machine({kernels, read, path("comm.h5"), 2, 8e9, "test"});
  }
};

TEST_F(SampleLoadCalibration, OneSamplesSecondsOnOneThreadUnscaled) {
  const nlohmann::json machine = calibrate(40000, "cpu");
  std::ofstream(path("machine.json")) << machine.dump();
  const MachineDescription m = load_machine_description(path("machine.json"));
  EXPECT_DOUBLE_EQ(m.sample_load_seconds, 1 / 40000.0);  // not scaled to the node's 2 cores
  EXPECT_FALSE(calibrate(0, "cpu").contains("sample_load_seconds"));  // not timed: no figure
  EXPECT_FALSE(calibrate(40000, "cuda").contains("sample_load_seconds"));  // host cores free
}

TEST_F(SampleLoadCalibration, ANonPositiveFigureIsRefusedByName) {
  nlohmann::json machine = calibrate(40000, "cpu");
  machine["sample_load_seconds"]["value"] = 0;
  std::ofstream(path("machine.json")) << machine.dump();
  try {
    load_machine_description(path("machine.json"));
    FAIL() << "a zero sample_load_seconds was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sample_load_seconds"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mlps
