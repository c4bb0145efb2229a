// bin/plan's passes over memory beyond the GEMMs' flops: a pipeline's micro-batches after the
// first reading the stage's weights again (weight_restream_bandwidth, and its calibration), a
// sharded optimizer's gradients written with zeros once a step, MPI's reduce-scatter copying its
// send buffer, what a core streams when it has the node to itself (core_memory_bandwidth,
// and its calibration), and a tensor-parallel rank's element-wise kernels on its own activations.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "src/base/errors.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

TEST(PlanStep, PipelineMicroBatchesAfterTheFirstReadTheWeightsAgain) {
  const std::string label = "pipeline --pp 4 --micro-batches 8 --schedule 1f1b --precision fp32";
  const MachineDescription cached = test_machine(8);
  MachineDescription evicted = cached;
  evicted.weight_restream_bandwidth = 2e10;
  const StepPrediction once = predict(label, 4, cached), again = predict(label, 4, evicted);
  // Without it, four passes over the stage's weights at the memory bandwidth; with it, each of
  // the 7 later micro-batches pays the stage's weight bytes at the restream bandwidth (which
  // weight_restream measures per weight byte of its four passes).
  const double stage_bytes = once.weights_from_memory / 4 * cached.memory_bandwidth;
  EXPECT_NEAR(again.weights_from_memory - once.weights_from_memory,
              7 * stage_bytes / evicted.weight_restream_bandwidth, 1e-15);
  EXPECT_DOUBLE_EQ(again.bubble_fraction, once.bubble_fraction);  // 1F1B's formula: M and P only
  EXPECT_GT(again.step, once.step + (again.weights_from_memory - once.weights_from_memory));
  // A rate twice the figure at the micro-batch's rows (4 here): half the cost.
  MachineDescription by_rows = evicted;
  by_rows.weight_restream_rows_fraction = {{2, 2.0}, {8, 2.0}};
  EXPECT_NEAR(predict(label, 4, by_rows).weights_from_memory - once.weights_from_memory,
              3.5 * stage_bytes / evicted.weight_restream_bandwidth, 1e-15);
  // One pass through the model has no later micro-batch.
  const std::string ddp = "data --zero 0 --precision fp32";
  EXPECT_DOUBLE_EQ(predict(ddp, 4, evicted).step, predict(ddp, 4, cached).step);
}

TEST(PlanStep, ShardedOptimizersLeaveTheGradientsZeroingToAPassOfItsOwn) {
  const MachineDescription m = test_machine(8);
  const double params = static_cast<double>(parameter_count(small_options().model));
  const StepPrediction ddp = predict("data --zero 0 --precision fp32", 4, m);
  for (const char* zero : {"1", "2", "3"}) {
    const StepPrediction sharded =
        predict(std::string("data --zero ") + zero + " --precision fp32", 4, m);
    EXPECT_DOUBLE_EQ(sharded.elementwise - ddp.elementwise, params * 4 / m.memory_bandwidth)
        << "--zero " << zero;
  }
}

TEST(PlanStep, PostingAReduceScatterCopiesItsSendBufferWhereTheDescriptionSaysSo) {
  MachineDescription nccl = test_machine(8);
  nccl.comm_overlaps_compute = false;  // every collective exposed: the copies add to the step
  MachineDescription mpi = nccl;
  mpi.reduce_scatter_copies_send_buffer = true;
  const double params = static_cast<double>(parameter_count(small_options().model));
  // ZeRO-1/2/3 reduce-scatter the whole fp32 gradient once a step: read and written once more.
  for (const char* zero : {"1", "2", "3"}) {
    const std::string label = std::string("data --zero ") + zero + " --precision fp32";
    const StepPrediction copied = predict(label, 4, mpi), in_place = predict(label, 4, nccl);
    EXPECT_EQ(in_place.send_buffer_copies, 0.0) << label;
    // (within 0.01%: the gradient is padded to a multiple of the ranks)
    EXPECT_NEAR(copied.send_buffer_copies, 2 * params * 4 / mpi.memory_bandwidth,
                1e-4 * copied.send_buffer_copies) << label;
    EXPECT_NEAR(copied.step - in_place.step, copied.send_buffer_copies, 1e-12) << label;
    // Inside the call that starts the reduce-scatter: communication, as the runs measure it.
    EXPECT_NEAR(copied.exposed_comm - in_place.exposed_comm, copied.send_buffer_copies, 1e-12)
        << label;
    EXPECT_DOUBLE_EQ(copied.work(), in_place.work()) << label;
    // Where collectives overlap compute, the copies still hold up the call that starts them.
    MachineDescription overlapping_nccl = nccl, overlapping_mpi = mpi;
    overlapping_nccl.comm_overlaps_compute = overlapping_mpi.comm_overlaps_compute = true;
    EXPECT_NEAR(predict(label, 4, overlapping_mpi).exposed_comm -
                    predict(label, 4, overlapping_nccl).exposed_comm,
                copied.send_buffer_copies, 1e-12) << label;
  }
  // DDP's all-reduce has no reduce-scatter to copy.
  EXPECT_EQ(predict("data --zero 0 --precision fp32", 4, mpi).send_buffer_copies, 0.0);
}

TEST(PlanMachine, BusyCoresShareTheNodesBandwidthEachUpToOneCoresOwn) {
  MachineDescription cpu = test_machine(8);  // a node of 8 cores, 1e11 B/s in all
  cpu.ranks_share_node = true;
  EXPECT_DOUBLE_EQ(cpu.bandwidth(1, 1), 1e11 / 8);  // no core figure: the node's share
  cpu.core_memory_bandwidth = 4e10;
  EXPECT_DOUBLE_EQ(cpu.bandwidth(1, 1), 4e10);      // alone: one core's own
  EXPECT_DOUBLE_EQ(cpu.bandwidth(2, 1), 4e10);      // 2 busy cores: 5e10 each would be more
  EXPECT_DOUBLE_EQ(cpu.bandwidth(4, 1), 2.5e10);    // 4 busy cores: the node's quarter
  EXPECT_DOUBLE_EQ(cpu.bandwidth(8, 1), 1.25e10);   // all busy: the node's share, as before
  EXPECT_DOUBLE_EQ(cpu.bandwidth(16, 1), 0.625e10); // time-shared cores: half of that each
  EXPECT_DOUBLE_EQ(cpu.bandwidth(1), 1e11);         // one rank on every core: the node's
  EXPECT_DOUBLE_EQ(cpu.bandwidth(1, 2), 8e10);      // 2 threads, each a core of its own
  EXPECT_DOUBLE_EQ(cpu.update_bandwidth(1, 1), 2e11 / 8);  // no core figure for the optimizer
}

// Element-wise kernels run on the rank's activations (the rows and widths its memory counts),
// not on its share of the parameters: what a scheme replicates, every rank runs whole.
TEST(PlanStep, ATensorParallelRanksElementwiseKernelsRunOnItsOwnActivations) {
  const MachineDescription m = test_machine(8);
  const double serial = predict("serial --precision fp32", 1, m).elementwise;
  const double plain = predict("tensor1d --tp 2 --precision fp32", 2, m).elementwise;
  const double sequence =
      predict("tensor1d --tp 2 --sequence-parallel --precision fp32", 2, m).elementwise;
  const double rows_split = predict("tensor3d --tp-dims 1,1,2 --precision fp32", 2, m).elementwise;
  const double f_split = predict("tensor3d --tp-dims 2,1,1 --precision fp32", 2, m).elementwise;
  ASSERT_GT(serial, 0);
  // The depth axis halves the rows of every activation: the serial bytes of 16 rows.
  const StepElementwiseBytes half = training_step_elementwise_bytes(small_options().model, 16, 4);
  EXPECT_DOUBLE_EQ(rows_split, (half.forward + half.backward) / m.memory_bandwidth);
  // Plain tensor1d splits the F-wide bias and ReLU only; LayerNorm, the residual add and the
  // H-wide biases run whole on both ranks. tensor3d [2,1,1] splits the same widths.
  EXPECT_GT(plain, 0.6 * serial);
  EXPECT_LT(plain, 0.9 * serial);
  EXPECT_DOUBLE_EQ(f_split, plain);
  // Sequence parallelism splits those too: about half, the loss over all classes kept whole.
  EXPECT_LT(sequence, 0.55 * serial);
  EXPECT_GT(sequence, 0.45 * serial);
}

TEST(PlanStep, WeightsGatheredRightBeforeTheirGemmsAreReadInCache) {
  const MachineDescription m = test_machine(8);
  const double model_bytes = 4.0 * static_cast<double>(parameter_count(small_options().model));
  // DDP streams the whole model four times (forward, input gradient, dW read and written);
  // ZeRO-3 gathers each unit just before its GEMMs: only the gradient's two passes remain.
  EXPECT_DOUBLE_EQ(predict("data --zero 0 --precision fp32", 2, m).weights_from_memory,
                   4 * model_bytes / m.memory_bandwidth);
  EXPECT_DOUBLE_EQ(predict("data --zero 3 --precision fp32", 2, m).weights_from_memory,
                   2 * model_bytes / m.memory_bandwidth);
  // tensor3d over depth 2 gathers its weights the same way; over rows it holds them.
  const StepPrediction depth = predict("tensor3d --tp-dims 1,1,2 --precision fp32", 2, m);
  const StepPrediction rows = predict("tensor3d --tp-dims 2,1,1 --precision fp32", 2, m);
  // (within 2%: a rank's shards also hold the bias and LayerNorm vectors, gathered or not)
  EXPECT_NEAR(depth.weights_from_memory, 2 * model_bytes / m.memory_bandwidth,
              2e-2 * depth.weights_from_memory);
  EXPECT_NEAR(rows.weights_from_memory, 4 * model_bytes / 2 / m.memory_bandwidth,
              2e-2 * rows.weights_from_memory);
}

class MemoryCalibration : public TempDirTest {
 protected:
  MemoryCalibration() : TempDirTest("mlpscale_memory_calibration_") {}
  void SetUp() override {
    TempDirTest::SetUp();
    std::ofstream(path("kernels.json")) << R"({"benchmarks": [
      {"name": "gemm/cpu/f32/NN/m:64/n:64/k:64", "run_type": "iteration", "real_time": 1,
       "TFLOP/s": 0.05},
      {"name": "gemm/cpu/f64/NN/m:64/n:64/k:64", "run_type": "iteration", "real_time": 1,
       "TFLOP/s": 0.02},
      {"name": "copy/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1, "GB/s": 12}]})";
    CommBenchRecord comm;
    comm.string_attributes = {{"backend", "mpi"}, {"device", "cpu"}, {"hosts", "node1"}};
    comm.integer_attributes = {{"ranks", 2}};
    comm.sweeps.push_back({"allreduce", {8, 1 << 20}, {2, 262144}, {6e-6, 1e-3},
                           {0.0013, 1.05}, {0.002, 1.6}, {0, 0}});
    write_comm_bench_hdf5(path("comm.h5"), comm);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A weight_restream file at `rows` whose two variants ran at these GB/s on one thread.
  KernelRates restream_file(int rows, double one_set, double five_sets) {
    const std::string name = "restream-" + std::to_string(rows) + ".json";
    const std::string prefix = "weight_restream/cpu/f32/rows:" + std::to_string(rows) +
                               "/out:256/in:64/sets:";
    std::ofstream(path(name)) << R"({"context": {"mlpscale_cpu_threads": "1", "mlpscale_model":
      "image_size 8, hidden 64, layers 2, ffn_hidden 256, batch )" << rows << R"("},
      "benchmarks": [
      {"name": ")" << prefix << R"(1", "run_type": "iteration", "real_time": 1, "GB/s": )"
                              << one_set << R"(},
      {"name": ")" << prefix << R"(5", "run_type": "iteration", "real_time": 1, "GB/s": )"
                              << five_sets << "}]}";
    return KernelRates(path(name));
  }
  nlohmann::json calibrate(std::vector<KernelRates> restream) {
    const KernelRates kernels(path("kernels.json"));
    const CommBenchRecord comm = read_comm_bench_hdf5(path("comm.h5"));
    return calibrated_machine(
        {kernels, comm, path("comm.h5"), 2, 8e9, "test", {}, nullptr, std::move(restream)});
  }
  nlohmann::json calibrate(double one_set, double five_sets) {
    return calibrate({restream_file(32, one_set, five_sets)});
  }
};

TEST_F(MemoryCalibration, TheWeightsBytesOverTheTimeBeyondTheCachedVariant) {
  const nlohmann::json machine = calibrate(20, 10);
  std::ofstream(path("machine.json")) << machine.dump();
  const MachineDescription m = load_machine_description(path("machine.json"));
  // 1/10 − 1/20 ns a byte beyond the cached variant: 20 GB/s on one thread, 40 for 2 cores.
  EXPECT_DOUBLE_EQ(m.weight_restream_bandwidth, 40e9);
  EXPECT_NE(machine["weight_restream_bandwidth"]["source"].get<std::string>().find("sets:5"),
            std::string::npos);
}

TEST_F(MemoryCalibration, ReReadsAtSeveralMicroBatchSizesGiveTheRateByRows) {
  // 32 rows: 1/5 − 1/20 ns a byte, 6.67 GB/s a thread, 13.3 for 2 cores; 8 rows: 40, 3 times
  // that.
  const nlohmann::json machine =
      calibrate({restream_file(32, 20, 5), restream_file(8, 20, 10)});
  std::ofstream(path("machine.json")) << machine.dump();
  const MachineDescription m = load_machine_description(path("machine.json"));
  // Two files: the line passes through both; the figure is at the first file's rows.
  EXPECT_NEAR(m.weight_restream_bandwidth, 2 * 1e9 / (1 / 5.0 - 1 / 20.0), 1e-3);
  ASSERT_EQ(m.weight_restream_rows_fraction.size(), 2u);
  EXPECT_DOUBLE_EQ(m.weight_restream_rows_fraction[0].first, 8);  // ascending
  EXPECT_NEAR(m.weight_restream_rows_fraction[0].second, 3, 1e-12);
  EXPECT_DOUBLE_EQ(m.weight_restream_rows_fraction[1].second, 1);
  // A rank alone on the node (its share 1): the rate at its micro-batch's rows, in log(rows).
  EXPECT_NEAR(m.restream_bandwidth(1, 0, 8), 40e9, 1e-3);
  EXPECT_NEAR(m.restream_bandwidth(1, 0, 16), 2 * m.weight_restream_bandwidth, 1e-3);
  EXPECT_DOUBLE_EQ(m.restream_bandwidth(1, 0, 64), m.weight_restream_bandwidth);  // end value
  EXPECT_DOUBLE_EQ(m.restream_bandwidth(1), m.weight_restream_bandwidth);  // rows unknown
  EXPECT_THROW(calibrate({restream_file(8, 20, 10), restream_file(8, 20, 5)}), InputError);
  // Three files, the middle one off the others' line (re-reads at 40, 10 and 10 GB/s a thread at
  // 8, 16 and 32 rows): the least-squares line in log-log has slope −1 and passes through
  // their geometric mean at 16 rows; the figure is the line at 8 rows, twice that mean.
  const double slow = 1 / (1 / 20.0 + 1 / 10.0);  // sets:5 at this beside sets:1 at 20: 10 GB/s
  const nlohmann::json three = calibrate(
      {restream_file(8, 40, 20), restream_file(16, 20, slow), restream_file(32, 20, slow)});
  std::ofstream(path("three.json")) << three.dump();
  const MachineDescription t = load_machine_description(path("three.json"));
  ASSERT_EQ(t.weight_restream_rows_fraction.size(), 3u);
  EXPECT_NEAR(t.weight_restream_rows_fraction[0].second, 1, 1e-12);  // the first file's rows
  // (within 1e-5: the file holds 6 digits of the slow rate)
  EXPECT_NEAR(t.weight_restream_rows_fraction[2].second, 0.25, 1e-5);  // 40 against 10: a slope
  EXPECT_NEAR(t.weight_restream_rows_fraction[1].second, 0.5, 1e-5);   // of −1 in log-log
  EXPECT_NEAR(t.weight_restream_bandwidth / 1e9, 2 * (2 * std::cbrt(40.0 * 10 * 10)), 1e-4);
}

TEST_F(MemoryCalibration, OneCoresBandwidthComesFromARunOnOneThread) {
  const KernelRates kernels(path("kernels.json"));
  const CommBenchRecord comm = read_comm_bench_hdf5(path("comm.h5"));
  auto core_file = [&](int threads) {
    std::ofstream(path("core.json")) << R"({"context": {"mlpscale_cpu_threads": ")" << threads
                                     << R"("}, "benchmarks": [
      {"name": "copy/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1, "GB/s": 9},
      {"name": "adam_update/cpu/f32/n:1024", "run_type": "iteration", "real_time": 1,
       "GB/s": 11}]})";
    return KernelRates(path("core.json"));
  };
  const KernelRates one = core_file(1);
  const nlohmann::json machine = calibrated_machine(
      {kernels, comm, path("comm.h5"), 2, 8e9, "test", {}, nullptr, {}, &one});
  EXPECT_DOUBLE_EQ(machine["core_memory_bandwidth"]["value"].get<double>(), 9e9);  // not scaled
  EXPECT_DOUBLE_EQ(machine["core_optimizer_bandwidth"]["value"].get<double>(), 11e9);
  const KernelRates two = core_file(2);
  EXPECT_THROW(calibrated_machine(
                   {kernels, comm, path("comm.h5"), 2, 8e9, "test", {}, nullptr, {}, &two}),
               InputError);
}

TEST_F(MemoryCalibration, WeightsThatStayedInCacheAreRefused) {
  EXPECT_THROW(calibrate(20, 20), InputError);
  EXPECT_THROW(calibrate(20, 25), InputError);
}

}  // namespace
}  // namespace mlps
