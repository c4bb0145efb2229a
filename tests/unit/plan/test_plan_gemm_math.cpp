// bin/plan's GEMM math: which figure a run's GEMMs are priced at (bf16/fp16 tensor cores, TF32
// with --math tf32, the fp32 rate where a description has none), the roofline that prices a GEMM
// at a tensor-core rate, the optional figures in a description file, and what bin/plan says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/base/errors.h"
#include "src/plan/plan_report.h"
#include "src/plan/rank_work.h"
#include "src/schemes/tensor2d/tensor2d_grid.h"
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
    EXPECT_EQ(b.gemm_memory_bound, 0) << c.label();
  }
  const auto bf16 = enumerate_candidates(small_options(), 4, {Precision::bf16});
  const PlanCandidate* ddp = find(bf16, "data --zero 0 --precision bf16");
  ASSERT_NE(ddp, nullptr);
  const StepPrediction p = predict_step(*ddp, plain);
  EXPECT_FALSE(p.gemm.tensor_cores);
  EXPECT_DOUBLE_EQ(p.compute, 6 * static_cast<double>(parameter_count(small_options().model)) *
                                  8 / plain.gemm_fp32_flops);  // 8 rows a rank
  EXPECT_GT(p.weights_from_memory, 0);  // the fp32 model's weight passes
}

TEST(PlanGemmMath, TheRooflineTakesTheSlowerOfFlopsAndBytes) {
  const LinearShape fc1{"block0.fc1", 2048, 8192};
  const double rate = 7.6e14, bandwidth = 3e12, element = 4;
  // 8 rows: the weight's 64 MiB dominate, far beyond the flops at this rate.
  const LinearGemmCosts small = linear_gemm_costs(fc1, 8, element, false);
  const double small_bytes = (8.0 * 2048 + 2048.0 * 8192 + 8.0 * 8192) * element;
  EXPECT_DOUBLE_EQ(small.forward.bytes, small_bytes);
  EXPECT_DOUBLE_EQ(small.forward.flops, 2.0 * 8 * 2048 * 8192);
  EXPECT_DOUBLE_EQ(roofline_seconds(small.forward, rate, bandwidth), small_bytes / bandwidth);
  EXPECT_GT(small_bytes / bandwidth, small.forward.flops / rate);
  // The weight gradient also reads and writes dW; a weight in cache is not read.
  EXPECT_DOUBLE_EQ(small.grad_weight.bytes, (8.0 * 8192 + 8.0 * 2048 + 2 * 2048.0 * 8192) * 4);
  EXPECT_DOUBLE_EQ(linear_gemm_costs(fc1, 8, element, true).forward.bytes,
                   (8.0 * 2048 + 8.0 * 8192) * element);
  // 8192 rows: bound by the flops.
  const LinearGemmCosts large = linear_gemm_costs(fc1, 8192, element, false);
  EXPECT_DOUBLE_EQ(roofline_seconds(large.grad_input, rate, bandwidth),
                   large.grad_input.flops / rate);
  EXPECT_LT(large.grad_input.bytes / bandwidth, large.grad_input.flops / rate);
  // The embed's input needs no gradient: no GEMM for it.
  EXPECT_EQ(linear_gemm_costs({"embed", 64, 64}, 8, element, false).grad_input.flops, 0);
}

// The whole step: a small model's GEMMs at tensor-core rates are bound by their bytes; a wide
// one's at many rows by their flops.
TEST(PlanGemmMath, TensorCoreStepsAreRooflinesOverTheRanksGemms) {
  const MachineDescription m = tensor_core_machine(1);
  Options o = small_options();  // H 64: every GEMM well under the machine's 80 flops per byte
  const PlanCandidate serial =
      *find(enumerate_candidates(o, 1, {Precision::bf16}), "serial --precision bf16");
  const StepPrediction small = predict_step(serial, m);
  EXPECT_TRUE(small.gemm.tensor_cores);
  double flops = 0, bytes = 0;
  for (const LinearShape& l : linear_shapes(o.model)) {
    // bin/serial's bf16 is typed storage: 16-bit operands, fp32 weight gradients.
    const LinearGemmCosts g = linear_gemm_costs(l, 32, 2, false, 4);
    flops += g.forward.flops + g.grad_input.flops + g.grad_weight.flops;
    bytes += g.forward.bytes + g.grad_input.bytes + g.grad_weight.bytes;
  }
  // The counted flops at the seconds per flop of the shapes' bytes.
  const double counted = model_flops_per_sample(o.model, false) * 32;
  EXPECT_NEAR(small.compute, counted * (bytes / m.memory_bandwidth) / flops, 1e-12 * small.compute);
  EXPECT_DOUBLE_EQ(small.gemm_memory_bound, small.compute - counted / m.gemm_bf16_flops);
  EXPECT_EQ(small.weights_from_memory, 0);  // the weights' reads are in the GEMMs' bytes

  o.model.hidden = 2048;
  o.model.image_size = 64;
  o.batch = 4096;
  const PlanCandidate wide =
      *find(enumerate_candidates(o, 1, {Precision::bf16}), "serial --precision bf16");
  const StepPrediction large = predict_step(wide, m);
  const double at_rate = model_flops_per_sample(o.model, false) * 4096 / m.gemm_bf16_flops;
  EXPECT_GE(large.compute, at_rate);
  EXPECT_LT(large.compute, 1.01 * at_rate);  // the 10-class classifier alone is bytes-bound
}

TEST(PlanGemmMath, Tf32OnlyWithMathTf32) {
  const MachineDescription m = tensor_core_machine(1);
  Options o = small_options();
  o.math = GemmCompute::tf32;
  const auto tf32 = enumerate_candidates(o, 1, {Precision::fp32, Precision::bf16});
  const PlanCandidate* fp32 = find(tf32, "serial --precision fp32 --math tf32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_EQ(predict_step(*fp32, m).gemm.figure, "gemm_tf32_flops");
  // A bf16 run takes no --math: its command must run.
  EXPECT_NE(find(tf32, "serial --precision bf16"), nullptr);
  EXPECT_EQ(find(tf32, "serial --precision bf16 --math tf32"), nullptr);
  const PlanCandidate plain =
      *find(enumerate_candidates(small_options(), 1, {Precision::fp32}), "serial --precision fp32");
  EXPECT_EQ(predict_step(plain, m).gemm.figure, "gemm_fp32_flops");
  EXPECT_EQ(predict_step(plain, m).step, predict_step(plain, test_machine(1)).step);
}

// The shapes a rank multiplies hold the weights its GEMMs read: its stage's, its tensor1d shard,
// a SUMMA panel per step (q of them), a gathered 3D block.
TEST(PlanGemmMath, EachRanksGemmShapesAreItsShareOfTheModel) {
  for (const PlanCandidate& c : enumerate_candidates(small_options(), 4, {Precision::bf16})) {
    SchemeShape shape;
    for (const RankWork& w : rank_work(c, shape)) {
      double weights = 0;
      for (const LinearShape& l : w.gemm_linears)
        weights += static_cast<double>(l.in) * static_cast<double>(l.out);
      if (c.scheme == "tensor2d") weights *= c.grid_as<Tensor2dGrid>().q;
      EXPECT_LE(weights, w.gemm_parameters) << c.label();  // biases and LayerNorm apart
      EXPECT_GT(weights, 0.9 * w.gemm_parameters) << c.label();
    }
  }
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

TEST_F(PlanGemmMathFile, ShippedGpuDescriptionsHaveTensorCoresAndTheirSources) {
  for (const char* path :
       {"inputs/machines/h100-cluster.json", "inputs/machines/a100-cluster.json"}) {
    const MachineDescription m = load_machine_description(path);
    EXPECT_GT(m.gemm_bf16_flops, 10 * m.gemm_fp32_flops) << path;
    EXPECT_EQ(m.gemm_fp16_flops, m.gemm_bf16_flops) << path;
    EXPECT_GT(m.gemm_tf32_flops, m.gemm_fp32_flops) << path;
    EXPECT_LT(m.gemm_tf32_flops, m.gemm_bf16_flops) << path;
    EXPECT_TRUE(m.gemm_rate(Precision::bf16, GemmCompute::fp32, 8).tensor_cores) << path;
  }
}

// What bin/plan prints and writes says which rate each row's GEMMs were priced at.
TEST_F(PlanGemmMathFile, TheTableExplanationAndJsonNameTheGemmRate) {
  std::vector<PlannedCandidate> plan;
  for (PlanCandidate& c :
       enumerate_candidates(small_options(), 1, {Precision::fp32, Precision::bf16})) {
    StepPrediction p = predict_step(c, tensor_core_machine(1));
    plan.push_back({std::move(c), std::move(p)});
  }
  const auto printed = [&](auto print) {
    std::FILE* f = std::tmpfile();
    print(f);
    std::rewind(f);
    std::string text;
    for (int ch; (ch = std::fgetc(f)) != EOF;) text += static_cast<char>(ch);
    std::fclose(f);
    return text;
  };
  const std::string rates = printed([&](std::FILE* f) { print_gemm_rates(f, plan); });
  EXPECT_NE(rates.find("GEMMs of --precision fp32: fp32 at 1 TFLOP/s per rank (gemm_fp32_flops)"),
            std::string::npos) << rates;
  EXPECT_NE(rates.find("GEMMs of --precision bf16: bf16 tensor cores at 8 TFLOP/s per rank "
                       "(gemm_bf16_flops)"), std::string::npos) << rates;
  const auto bf16 = std::find_if(plan.begin(), plan.end(), [](const PlannedCandidate& c) {
    return c.candidate.options.precision == Precision::bf16;
  });
  const std::string explained =
      printed([&](std::FILE* f) { print_explanation(f, *bf16, 1); });
  EXPECT_NE(explained.find("GEMMs on bf16 tensor cores at 8 TFLOP/s"), std::string::npos)
      << explained;

  const std::string path = (dir_ / "plan.json").string();
  write_plan_json(path, plan, "m", "{}");
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  ASSERT_EQ(doc["candidates"].size(), plan.size());
  for (const nlohmann::json& row : doc["candidates"]) {
    const bool is_bf16 = row["precision"] == "bf16";
    EXPECT_EQ(row["gemm_rate"]["math"], row["precision"]) << row["label"];
    EXPECT_EQ(row["gemm_rate"]["tensor_cores"], is_bf16) << row["label"];
    EXPECT_DOUBLE_EQ(row["gemm_rate"]["flops_per_second"].get<double>(), is_bf16 ? 8e12 : 1e12);
    EXPECT_EQ(row["gemm_memory_bound_seconds"].get<double>() > 0, is_bf16) << row["label"];
  }
}

}  // namespace
}  // namespace mlps
