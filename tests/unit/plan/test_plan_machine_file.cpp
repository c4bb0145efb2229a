// bin/plan's machine descriptions as files: the shipped ones load, a figure without its source
// is refused, and --calibrate's description from bench_kernels and bench_comm results.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <tuple>

#include "src/base/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

class PlanMachineFile : public TempDirTest {
 protected:
  PlanMachineFile() : TempDirTest("mlpscale_plan_") {}
  std::string write(const std::string& text) {
    const std::string path = (dir_ / "machine.json").string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(PlanMachineFile, ShippedDescriptionsLoad) {
  for (const char* path :
       {"inputs/machines/h100-cluster.json", "inputs/machines/a100-cluster.json"}) {
    const MachineDescription m = load_machine_description(path);
    EXPECT_EQ(m.ranks_per_node, 8) << path;
    EXPECT_FALSE(m.ranks_share_node) << path;
    EXPECT_GT(m.gemm_fp32_flops, 1e13) << path;
    EXPECT_GT(m.intra_node.bus_bandwidth, m.inter_node.bus_bandwidth) << path;
  }
}

TEST_F(PlanMachineFile, AFigureWithoutItsSourceIsRefusedByName) {
  const std::string figure = R"({"value": 1e9, "source": "datasheet"})";
  const std::string link =
      R"({"latency_seconds": )" + figure + R"(, "bus_bandwidth": )" + figure + "}";
  const std::string good = R"({"name": "m", "ranks_per_node": 4, "ranks_share_node": true,
      "comm_overlaps_compute": false,
      "memory_bytes": )" + figure + R"(, "gemm_fp32_flops": )" + figure +
      R"(, "gemm_fp64_flops": )" + figure + R"(, "memory_bandwidth": )" + figure +
      R"(, "intra_node": )" + link + R"(, "inter_node": )" + link + "}";
  const MachineDescription m = load_machine_description(write(good));
  EXPECT_DOUBLE_EQ(m.gemm_flops(Precision::fp32, 4), 1e9 / 4);  // four ranks share the node
  EXPECT_FALSE(m.reduce_scatter_copies_send_buffer);            // optional: absent, no copies
  std::string unsourced = good;
  unsourced.replace(unsourced.find("\"datasheet\""), 11, "\"\"");
  try {
    load_machine_description(write(unsourced));
    FAIL() << "an unsourced figure was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("memory_bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_machine_description(write("{")), InputError);
  EXPECT_THROW(load_machine_description((dir_ / "absent.json").string()), InputError);
}

// Values that once loaded: a fractional rank count (read as 1) and no memory at all. A directory
// or a FIFO as the file: one line, not a stream error or an open that blocks.
TEST_F(PlanMachineFile, ImpossibleFiguresAndNonFilesAreRefusedByName) {
  std::string text;
  {
    std::ifstream in("inputs/machines/h100-cluster.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto refused_naming = [&](const std::string& from, const std::string& to,
                                  const std::string& key) {
    std::string changed = text;
    const size_t at = changed.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    changed.replace(at, from.size(), to);
    try {
      load_machine_description(write(changed));
      ADD_FAILURE() << key << ": " << to << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused_naming("\"ranks_per_node\": 8", "\"ranks_per_node\": 1.5", "ranks_per_node");
  refused_naming("\"value\": 84465090560", "\"value\": 0", "memory_bytes must be positive");
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {dir_.string(), fifo}) {
    try {
      load_machine_description(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not a file to read"), std::string::npos) << e.what();
    }
  }
}

TEST_F(PlanMachineFile, CalibrationTakesTheBestRatesAndTheCommSweepsEnds) {
  const std::string kernels = (dir_ / "kernels.json").string();
  std::ofstream(kernels) << R"({"benchmarks": [
    {"name": "gemm/cpu/f32/NN/m:8/n:8/k:8", "run_type": "iteration", "real_time": 1,
     "TFLOP/s": 0.01},
    {"name": "gemm/cpu/f32/NN/m:64/n:64/k:64", "run_type": "iteration", "real_time": 1,
     "TFLOP/s": 0.05},
    {"name": "gemm/cpu/f64/NN/m:64/n:64/k:64", "run_type": "iteration", "real_time": 1,
     "TFLOP/s": 0.02},
    {"name": "copy/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1, "GB/s": 12},
    {"name": "stream_add/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1,
     "GB/s": 15}]})";
  CommBenchRecord written;
  written.string_attributes = {{"backend", "mpi"}, {"device", "cpu"}, {"hosts", "node1"}};
  written.integer_attributes = {{"ranks", 4}};
  written.sweeps.push_back({"allreduce", {8, 1 << 20}, {2, 262144}, {6e-6, 1e-3},
                            {0.0013, 1.05}, {0.002, 1.6}, {0, 0}});
  const std::string comm = (dir_ / "comm.h5").string();
  write_comm_bench_hdf5(comm, written);
  const KernelRates rates(kernels);
  const CommBenchRecord read = read_comm_bench_hdf5(comm);
  const std::string machine = write(
      calibrated_machine({rates, read, comm, 2, 8e9, "test"}).dump());
  const MachineDescription m = load_machine_description(machine);
  EXPECT_DOUBLE_EQ(m.optimizer_bandwidth, m.memory_bandwidth);  // no Adam file: the stream's
  const std::string adam = (dir_ / "adam.json").string();
  std::ofstream(adam) << R"({"context": {"mlpscale_cpu_threads": "1"}, "benchmarks": [
    {"name": "adam_update/cpu/f32/n:16777216", "run_type": "iteration", "real_time": 1,
     "GB/s": 25}]})";
  const KernelRates adam_rates(adam);
  const MachineDescription with_adam = load_machine_description(write(
      calibrated_machine({rates, read, comm, 2, 8e9, "test", {}, &adam_rates}).dump()));
  EXPECT_DOUBLE_EQ(with_adam.optimizer_bandwidth, 50e9);  // one thread's, for the node's 2 cores
  // The offload file's Adam in two processes at once: 2 GB in 2 s and 2 GB in 4 s are the
  // node's 4 GB in 4 s, not the sum of their rates (1 + 0.5 GB/s) nor one process's.
  std::vector<KernelRates> offload;
  for (const auto& [file, iterations, rate] :
       {std::tuple{"offload-0.json", 10, 1.0}, std::tuple{"offload-1.json", 20, 0.5}}) {
    std::ofstream((dir_ / file).string())
        << R"({"benchmarks": [{"name": "offload_adam/disk/f32/mb:64/real_time", )"
        << R"("run_type": "iteration", "iterations": )" << iterations
        << R"(, "real_time": 200, "time_unit": "ms", "GB/s": )" << rate << "}]}";
    offload.emplace_back((dir_ / file).string());
  }
  CalibrationInputs node{rates, read, comm, 2, 8e9, "test"};
  node.offload = offload;
  EXPECT_DOUBLE_EQ(load_machine_description(write(calibrated_machine(node).dump()))
                       .offload_bandwidth,
                   1e9);
  node.offload = {rates};  // a file without offload_adam: refused, naming it
  EXPECT_THROW(calibrated_machine(node), InputError);
  EXPECT_DOUBLE_EQ(m.gemm_fp32_flops, 0.05e12);  // the fastest GEMM of its type
  EXPECT_DOUBLE_EQ(m.gemm_fp64_flops, 0.02e12);
  EXPECT_DOUBLE_EQ(m.memory_bandwidth, 15e9);     // the faster of copy and STREAM add
  EXPECT_DOUBLE_EQ(m.intra_node.latency_seconds, 6e-6 / 6);  // 2(n − 1) ring steps
  EXPECT_DOUBLE_EQ(m.intra_node.bus_bandwidth, 1.6e9);        // the largest message's busbw
  EXPECT_TRUE(m.ranks_share_node);  // CPU ranks share the node, and nothing overlaps
  EXPECT_FALSE(m.comm_overlaps_compute);
  EXPECT_TRUE(m.reduce_scatter_copies_send_buffer);  // MPI's collectives
  EXPECT_EQ(m.ranks_per_node, 2);
  EXPECT_THROW(read_comm_bench_hdf5(kernels), InputError);  // not an HDF5 bench_comm file
}

// bench_kernels JSON at one batch: the model's GEMMs at `block` TFLOP/s, the square at `square`.
std::string kernels_at_rows(int rows, double block, double square) {
  const std::string r = std::to_string(rows);
  auto entry = [](const std::string& name, double rate) {
    return R"({"name": ")" + name + R"(", "run_type": "iteration", "real_time": 1, "TFLOP/s": )" +
           std::to_string(rate) + "}";
  };
  return R"({"context": {"mlpscale_model": "image_size 8, hidden 64, layers 1, ffn_mult 4, )"
         R"(batch )" + r + R"(", "mlpscale_cpu_threads": "1"}, "benchmarks": [)" +
         entry("gemm/cpu/f32/NT/m:" + r + "/n:256/k:64", block) + "," +
         entry("gemm/cpu/f32/TN/m:256/n:64/k:" + r, block) + "," +
         entry("gemm/cpu/f32/NN/m:2048/n:2048/k:2048", square) + "," +
         entry("gemm/cpu/f64/NN/m:2048/n:2048/k:2048", square / 2) + "," +
         R"({"name": "copy/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1, )"
         R"("GB/s": 12}]})";
}

// bench_kernels files of (rows, the model's GEMM rate, the square's rate) in `dir`.
std::vector<KernelRates> rows_files(const std::filesystem::path& dir,
                                    std::initializer_list<std::tuple<int, double, double>> files) {
  std::vector<KernelRates> by_rows;
  for (const auto& [rows, block, square] : files) {
    const std::string path = (dir / ("rows" + std::to_string(rows) + ".json")).string();
    std::ofstream(path) << kernels_at_rows(rows, block, square);
    by_rows.emplace_back(path);
  }
  return by_rows;
}

// The description --calibrate writes from kernels at 32 rows in `dir`, a 2-rank all-reduce sweep
// (run with --evict-bytes `evict_bytes`), `by_rows` and `cold` (bench_comm --evict-bytes).
nlohmann::json calibrated_at_32_rows(const std::filesystem::path& dir,
                                     const std::vector<KernelRates>& by_rows,
                                     int64_t evict_bytes = 0,
                                     const CommBenchRecord* cold = nullptr) {
  const std::string kernels = (dir / "kernels.json").string();
  std::ofstream(kernels) << kernels_at_rows(32, 0.03, 0.04);
  CommBenchRecord comm;
  comm.string_attributes = {{"backend", "mpi"}, {"device", "cpu"}, {"hosts", "node1"}};
  comm.integer_attributes = {{"ranks", 2}, {"evict_bytes", evict_bytes}};
  comm.sweeps.push_back({"allreduce", {8, 1 << 20}, {2, 262144}, {6e-6, 1e-3},
                         {0.0013, 1.05}, {0.002, 1.6}, {0, 0}});
  return calibrated_machine({KernelRates(kernels), comm, "comm.h5", 2, 8e9, "test", by_rows,
                             nullptr, {}, nullptr, cold, "cold.h5"});
}

// A sweep of calls on evicted buffers is not the link's rate (nccl-tests' calls in a row).
TEST_F(PlanMachineFile, CalibrationRefusesASweepOfEvictedBuffers) {
  EXPECT_NO_THROW(calibrated_at_32_rows(dir_, {}, 0));
  try {
    calibrated_at_32_rows(dir_, {}, int64_t{64} << 20);
    ADD_FAILURE() << "a sweep with --evict-bytes was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--evict-bytes"), std::string::npos) << e.what();
  }
}

// The cold sweep gives both links their cold fraction, and must be an --evict-bytes sweep.
TEST_F(PlanMachineFile, CalibrationTakesTheColdFractionFromAnEvictedSweep) {
  CommBenchRecord cold;
  cold.integer_attributes = {{"ranks", 2}, {"evict_bytes", int64_t{64} << 20}};
  cold.sweeps.push_back({"allreduce", {1 << 20}, {262144}, {1e-3}, {1.05}, {0.8}, {0}});
  const MachineDescription m =
      load_machine_description(write(calibrated_at_32_rows(dir_, {}, 0, &cold).dump()));
  ASSERT_EQ(m.intra_node.cold_bytes_fraction.size(), 1u);
  EXPECT_DOUBLE_EQ(m.intra_node.cold_bytes_fraction[0].second, 0.5);  // 0.8 over 1.6 GB/s
  EXPECT_EQ(m.inter_node.cold_bytes_fraction, m.intra_node.cold_bytes_fraction);  // one node
  cold.integer_attributes["evict_bytes"] = 0;
  EXPECT_THROW(calibrated_at_32_rows(dir_, {}, 0, &cold), InputError);
}

// A square GEMM runs once per file: one slow run must not lift its batch's fraction.
TEST_F(PlanMachineFile, GemmRateByRowsIsOverTheFilesMedianSquare) {
  const auto by_rows = rows_files(dir_, {{8, 0.02, 0.04}, {16, 0.03, 0.05}, {64, 0.04, 0.03}});
  const MachineDescription m =
      load_machine_description(write(calibrated_at_32_rows(dir_, by_rows).dump()));
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(8), 0.02 / 0.04);  // the median square: 0.04
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(16), 0.03 / 0.04);
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(64), 0.04 / 0.04);  // not over its own slow square's 0.03
}

TEST_F(PlanMachineFile, GemmRateByRowsIsMeasuredAndInterpolated) {
  const auto by_rows = rows_files(dir_, {{64, 0.04, 0.04}, {8, 0.02, 0.04}});
  const nlohmann::json calibrated = calibrated_at_32_rows(dir_, by_rows);
  const KernelRates rates((dir_ / "kernels.json").string());
  EXPECT_EQ(rates.model_batch(), 32);
  EXPECT_EQ(rates.cpu_threads(), 1);
  const MachineDescription m = load_machine_description(write(calibrated.dump()));
  EXPECT_DOUBLE_EQ(m.gemm_fp32_flops, 0.08e12);  // one thread's rate times the node's 2 cores
  ASSERT_EQ(m.gemm_rows_fraction.size(), 2u);    // sorted by rows
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(8), 0.5);
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(4), 0.5);   // the end values beyond the table
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(64), 1.0);
  EXPECT_DOUBLE_EQ(m.gemm_efficiency(1000), 1.0);
  EXPECT_NEAR(m.gemm_efficiency(std::sqrt(8.0 * 64)), 0.75, 1e-12);  // halfway in log(rows)

  // The serial step's GEMMs run at the rate for its batch, here 32 rows.
  Options o = small_options();
  PlanCandidate serial = *find(enumerate_candidates(o, 1, {Precision::fp32}),
                               "serial --precision fp32");
  serial.threads_per_rank = 1;
  const double flops = 6 * static_cast<double>(parameter_count(o.model)) * 32;
  const double rate = 0.08e12 / 2 * (0.5 + 0.5 * std::log(4.0) / std::log(8.0));
  EXPECT_NEAR(predict_step(serial, m).compute, flops / rate, 1e-12);

  std::string bad = kernels_at_rows(8, 0.02, 0.04);
  bad.replace(bad.find("batch 8"), 7, "no batch");
  const std::string bad_path = (dir_ / "bad.json").string();
  std::ofstream(bad_path) << bad;
  EXPECT_THROW(calibrated_at_32_rows(dir_, {KernelRates(bad_path)}), InputError);
}

}  // namespace
}  // namespace mlps
