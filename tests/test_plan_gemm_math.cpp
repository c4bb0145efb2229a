// bin/plan's GEMM math: which figure a run's GEMMs are priced at (bf16/fp16 tensor cores, TF32
// with --math tf32, the fp32 rate where a description has none), and the optional figures in a
// description file.
#include <gtest/gtest.h>

#include <fstream>

#include "src/errors.h"
#include "tests/plan_test_inputs.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

// test_machine with tensor cores: every rate distinct, so a wrong pick shows.
MachineDescription tensor_core_machine(int ranks_per_node) {
  MachineDescription m = test_machine(ranks_per_node);
  m.gemm_bf16_flops = 8e12;
  m.gemm_fp16_flops = 6e12;
  m.gemm_tf32_flops = 3e12;
  return m;
}

TEST(PlanGemmMath, EachMathTakesItsOwnFigure) {
  const MachineDescription m = tensor_core_machine(8);
  const GemmRate bf16 = m.gemm_rate(Precision::bf16, GemmCompute::fp32, 8);
  EXPECT_DOUBLE_EQ(bf16.flops, 8e12);
  EXPECT_TRUE(bf16.tensor_cores);
  EXPECT_EQ(bf16.figure, "gemm_bf16_flops");
  EXPECT_EQ(bf16.math, "bf16");
  EXPECT_DOUBLE_EQ(m.gemm_flops(Precision::fp16, GemmCompute::fp32, 8), 6e12);
  // TF32 only where the run asks for it (--math tf32), and only for fp32 GEMMs.
  EXPECT_DOUBLE_EQ(m.gemm_flops(Precision::fp32, GemmCompute::fp32, 8), 1e12);
  EXPECT_FALSE(m.gemm_rate(Precision::fp32, GemmCompute::fp32, 8).tensor_cores);
  const GemmRate tf32 = m.gemm_rate(Precision::fp32, GemmCompute::tf32, 8);
  EXPECT_DOUBLE_EQ(tf32.flops, 3e12);
  EXPECT_EQ(tf32.figure, "gemm_tf32_flops");
  EXPECT_DOUBLE_EQ(m.gemm_flops(Precision::bf16, GemmCompute::tf32, 8), 8e12);
  EXPECT_DOUBLE_EQ(m.gemm_flops(Precision::fp64, GemmCompute::tf32, 8), 5e11);  // always DGEMM
  EXPECT_EQ(m.gemm_rate(Precision::fp64, GemmCompute::fp32, 8).figure, "gemm_fp64_flops");
  EXPECT_NE(bf16.describe().find("bf16 tensor cores at 8 TFLOP/s"), std::string::npos)
      << bf16.describe();
}

TEST(PlanGemmMath, AbsentFiguresFallBackToTheFp32Rate) {
  MachineDescription cpu = test_machine(2);  // no tensor cores, as a CPU
  cpu.ranks_share_node = true;
  for (const auto& [precision, math] : {std::pair{Precision::bf16, GemmCompute::fp32},
                                        std::pair{Precision::fp16, GemmCompute::fp32},
                                        std::pair{Precision::fp32, GemmCompute::tf32}}) {
    const GemmRate r = cpu.gemm_rate(precision, math, 2);
    EXPECT_DOUBLE_EQ(r.flops, 1e12 / 2) << r.math;  // the fp32 rate, shared by two ranks
    EXPECT_FALSE(r.tensor_cores) << r.math;
    EXPECT_EQ(r.figure, "gemm_fp32_flops") << r.math;
    EXPECT_NE(r.describe().find("at the fp32 rate"), std::string::npos) << r.describe();
  }
  // One figure present prices its math alone.
  cpu.gemm_fp16_flops = 4e12;
  EXPECT_DOUBLE_EQ(cpu.gemm_flops(Precision::fp16, GemmCompute::fp32, 2), 2e12);
  EXPECT_DOUBLE_EQ(cpu.gemm_flops(Precision::bf16, GemmCompute::fp32, 2), 0.5e12);
}

// Tensor-core figures change nothing for fp32 and fp64 runs (every scheme on 4 ranks), nor for
// a bf16 run on a description without them.
TEST(PlanGemmMath, Fp32AndFp64PredictionsIgnoreTensorCoreFigures) {
  const MachineDescription plain = test_machine(4), tensor = tensor_core_machine(4);
  const auto all =
      enumerate_candidates(small_options(), 4, {Precision::fp32, Precision::fp64});
  ASSERT_GT(all.size(), 20u);
  for (const PlanCandidate& c : all) {
    const StepPrediction a = predict_step(c, plain), b = predict_step(c, tensor);
    EXPECT_EQ(a.step, b.step) << c.label();
    EXPECT_EQ(a.compute, b.compute) << c.label();
  }
  const auto bf16 = enumerate_candidates(small_options(), 4, {Precision::bf16});
  const PlanCandidate* ddp = find(bf16, "data --zero 0 --precision bf16");
  ASSERT_NE(ddp, nullptr);
  const StepPrediction p = predict_step(*ddp, plain);
  EXPECT_DOUBLE_EQ(p.compute, 6 * static_cast<double>(parameter_count(small_options().model)) *
                                  8 / plain.gemm_fp32_flops);  // 8 rows a rank
  EXPECT_GT(p.weights_from_memory, 0);  // the fp32 model's weight passes
}

class PlanGemmMathFile : public TempDirTest {
 protected:
  PlanGemmMathFile() : TempDirTest("mlpscale_gemm_math_") {}
  // A description with `extra` ("key": value, ...) added to its figures.
  std::string write(const std::string& extra) {
    const std::string figure = R"({"value": 1e12, "source": "datasheet"})";
    const std::string link =
        R"({"latency_seconds": )" + figure + R"(, "bus_bandwidth": )" + figure + "}";
    const std::string path = (dir_ / "machine.json").string();
    std::ofstream(path) << R"({"name": "m", "ranks_per_node": 8, "ranks_share_node": false,
        "comm_overlaps_compute": true, "memory_bytes": )" + figure +
                               R"(, "gemm_fp32_flops": )" + figure + R"(, "gemm_fp64_flops": )" +
                               figure + R"(, "memory_bandwidth": )" + figure +
                               R"(, "intra_node": )" + link + R"(, "inter_node": )" + link +
                               (extra.empty() ? "" : ", " + extra) + "}";
    return path;
  }
  std::string refusal(const std::string& extra) {
    try {
      load_machine_description(write(extra));
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  }
};

TEST_F(PlanGemmMathFile, OptionalFiguresAreReadAndBadOnesRefusedByName) {
  const MachineDescription absent = load_machine_description(write(""));
  EXPECT_EQ(absent.gemm_bf16_flops, 0);
  EXPECT_EQ(absent.gemm_fp16_flops, 0);
  EXPECT_EQ(absent.gemm_tf32_flops, 0);
  const MachineDescription m = load_machine_description(
      write(R"("gemm_bf16_flops": {"value": 7e14, "source": "datasheet x 0.77"},
               "gemm_tf32_flops": {"value": 3e14, "source": "datasheet x 0.77"})"));
  EXPECT_DOUBLE_EQ(m.gemm_bf16_flops, 7e14);
  EXPECT_DOUBLE_EQ(m.gemm_tf32_flops, 3e14);
  EXPECT_EQ(m.gemm_fp16_flops, 0);
  for (const char* key : {"gemm_bf16_flops", "gemm_fp16_flops", "gemm_tf32_flops"}) {
    const std::string k = std::string("\"") + key + "\": ";
    for (const std::string& bad :
         {k + R"({"value": -7e14, "source": "datasheet"})",  // negative
          k + R"({"value": 0, "source": "datasheet"})",      // no rate
          k + "7e14",                                          // no source
          k + R"({"value": "fast", "source": "datasheet"})"}) {
      const std::string line = refusal(bad);
      EXPECT_NE(line.find(key), std::string::npos) << bad << ": " << line;
      EXPECT_NE(line.find("machine.json"), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace mlps
