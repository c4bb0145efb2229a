// bin/plan's price of each rank's data loader: the samples its prefetch thread makes cost the
// step nothing while a core is idle, and their time when every core already runs a rank, less a
// pipeline's bubble (its rank waits for a message, its core free for the loader); and
// the calibration that measures a sample (bench_kernels' sample_load).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "src/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

MachineDescription cpu_node_of(int cores) {
  MachineDescription m = test_machine(cores);
  m.ranks_share_node = true;
  m.sample_load_seconds = 2e-5;
  return m;
}

TEST(PlanMachine, TheLoaderCostsAStepOnlyWhenEveryCoreRunsARank) {
  const MachineDescription cpu = cpu_node_of(8);
  EXPECT_EQ(cpu.data_loading_seconds(64, 1, 1), 0.0);  // 7 idle cores
  EXPECT_EQ(cpu.data_loading_seconds(64, 4, 1), 0.0);  // 4 idle cores
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 8, 1), 64 * 2e-5);  // all busy: its own samples
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 8), 64 * 2e-5);     // cores split among ranks
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 1), 64 * 2e-5 / 8);  // one rank on every core
  EXPECT_DOUBLE_EQ(cpu.data_loading_seconds(64, 16, 1), 2 * 64 * 2e-5);  // time-shared cores
  EXPECT_DOUBLE_EQ(cpu_node_of(3).data_loading_seconds(10, 3), 10 * 2e-5);  // 3 of 3 busy
  MachineDescription unmeasured = cpu;
  unmeasured.sample_load_seconds = 0;
  EXPECT_EQ(unmeasured.data_loading_seconds(64, 8, 1), 0.0);
  MachineDescription gpu = test_machine(8);  // a GPU node's host cores are free for loaders
  gpu.sample_load_seconds = 2e-5;
  EXPECT_EQ(gpu.data_loading_seconds(64, 8, 1), 0.0);
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
    const StepPrediction p = predict(label, 4, cpu);  // less what a pipeline's bubble hides
    EXPECT_DOUBLE_EQ(p.data_loading, std::max(0.0, loaded * sample - p.bubble)) << label;
    MachineDescription unmeasured = cpu;
    unmeasured.sample_load_seconds = 0;
    EXPECT_NEAR(p.step - predict(label, 4, unmeasured).step, p.data_loading, 1e-12) << label;
  }
}

TEST(PlanStep, APipelinesBubbleLeavesItsCoreToTheLoader) {
  const std::string label = "pipeline --pp 4 --micro-batches 4 --schedule 1f1b --precision fp32";
  const double batch = static_cast<double>(small_options().batch);
  MachineDescription cpu = cpu_node_of(4);
  const StepPrediction p = predict(label, 4, cpu);
  ASSERT_GT(p.bubble, 0);
  cpu.sample_load_seconds = 0.5 * p.bubble / batch;  // half the bubble's time: hidden
  EXPECT_EQ(predict(label, 4, cpu).data_loading, 0.0);
  cpu.sample_load_seconds = 3 * p.bubble / batch;  // three bubbles' time: two of them exposed
  EXPECT_NEAR(predict(label, 4, cpu).data_loading, 2 * p.bubble, 1e-12 * p.bubble);
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
