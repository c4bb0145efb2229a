#include "src/plan/plan_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/base/human_bytes.h"
#include "src/base/publish_file.h"

namespace mlps {

void rank_candidates(std::vector<PlannedCandidate>& plan) {
  std::stable_sort(plan.begin(), plan.end(), [](const auto& a, const auto& b) {
    if (a.prediction.fits() != b.prediction.fits()) return a.prediction.fits();
    return a.prediction.step < b.prediction.step;
  });
}

void print_gemm_rates(std::FILE* out, const std::vector<PlannedCandidate>& plan) {
  for (const Precision precision :
       {Precision::fp32, Precision::fp64, Precision::bf16, Precision::fp16}) {
    const auto row = std::find_if(plan.begin(), plan.end(), [&](const PlannedCandidate& c) {
      return c.candidate.options.precision == precision;
    });
    if (row == plan.end()) continue;
    const GemmRate& g = row->prediction.gemm;
    std::fprintf(out, "GEMMs of --precision %s: %s per rank (%s)%s\n", to_string(precision),
                 g.describe().c_str(), g.figure.c_str(),
                 g.tensor_cores ? ", each the slower of its flops and its bytes" : "");
  }
}

void print_plan_table(std::FILE* out, const std::vector<PlannedCandidate>& plan, size_t rows) {
  std::fprintf(out, "%4s %10s %11s %10s %10s %7s %10s  %s\n", "rank", "step ms", "samples/s",
               "compute ms", "exposed ms", "bubble", "mem/rank", "configuration");
  for (size_t i = 0; i < std::min(rows, plan.size()); ++i) {
    const StepPrediction& p = plan[i].prediction;
    std::fprintf(out, "%4zu %10.3f %11.1f %10.3f %10.3f %6.1f%% %10s  %s%s\n", i + 1,
                 p.step * 1e3, p.samples_per_second, p.work() * 1e3,
                 p.exposed_comm * 1e3, 100 * p.bubble_fraction,
                 human_bytes(p.memory.total()).c_str(), plan[i].candidate.label().c_str(),
                 p.fits() ? "" : "  (does not fit)");
  }
  if (rows < plan.size())
    std::fprintf(out, "(%zu more; --top to show them)\n", plan.size() - rows);
}

void print_explanation(std::FILE* out, const PlannedCandidate& planned, size_t row) {
  const StepPrediction& p = planned.prediction;
  std::fprintf(out, "#%zu %s\n  run it: %s\n", row, planned.candidate.label().c_str(),
               planned.candidate.command().c_str());
  std::fprintf(out, "  step %.3f ms = compute %.3f (GEMMs %.3f, their weights from memory %.3f, "
               "element-wise %.3f) + bubble %.3f (%.1f%%) + exposed communication %.3f + "
               "optimizer %.3f + data loading %.3f\n",
               p.step * 1e3, p.work() * 1e3, p.compute * 1e3, p.weights_from_memory * 1e3,
               p.elementwise * 1e3, p.bubble * 1e3, 100 * p.bubble_fraction,
               p.exposed_comm * 1e3, p.optimizer * 1e3, p.data_loading * 1e3);
  if (p.gemm.tensor_cores)
    std::fprintf(out, "  GEMMs on %s per rank (%s), each the slower of its flops and its "
                 "operands' bytes (weights included) at the bandwidth: %.3f ms beyond the flops\n",
                 p.gemm.describe().c_str(), p.gemm.figure.c_str(), p.gemm_memory_bound * 1e3);
  else
    std::fprintf(out, "  GEMMs in %s per rank (%s)\n", p.gemm.describe().c_str(),
                 p.gemm.figure.c_str());
  std::fprintf(out, "  communication %.3f ms in all (send-buffer copies %.3f), %.3f ms exposed\n",
               p.comm * 1e3, p.send_buffer_copies * 1e3, p.exposed_comm * 1e3);
  if (!p.collectives.empty())
    std::fprintf(out, "    %-22s %6s %6s %12s %8s %10s\n", "collective", "ranks", "link", "MB/step",
                 "calls", "ms");
  for (const auto& [key, c] : p.collectives)
    std::fprintf(out, "    %-22s %6d %6s %12.3f %8.0f %10.3f\n", key.c_str(), c.group_size,
                 c.inter_node ? "inter" : "intra", c.bytes / 1e6, c.calls, c.seconds * 1e3);
  std::fprintf(out, "  memory %s of %s per rank: %s\n", human_bytes(p.memory.total()).c_str(),
               human_bytes(p.memory_available).c_str(), p.memory.breakdown().c_str());
}

void write_plan_json(const std::string& path, const std::vector<PlannedCandidate>& plan,
                     const std::string& machine, const std::string& options_json) {
  nlohmann::json doc;
  doc["machine"] = machine;
  doc["options"] = nlohmann::json::parse(options_json);
  doc["candidates"] = nlohmann::json::array();
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlanCandidate& c = plan[i].candidate;
    const StepPrediction& p = plan[i].prediction;
    nlohmann::json row = {
        {"rank", i + 1}, {"scheme", c.scheme}, {"flags", c.flags}, {"label", c.label()},
        {"command", c.command()}, {"world", c.world},
        {"precision", to_string(c.options.precision)},
        {"checkpoint_activations", c.options.model.checkpoint_activations},
        {"fits", p.fits()}, {"step_seconds", p.step},
        {"samples_per_second", p.samples_per_second},
        {"gemm_rate", {{"math", p.gemm.math}, {"figure", p.gemm.figure},
                       {"flops_per_second", p.gemm.flops},
                       {"tensor_cores", p.gemm.tensor_cores},
                       {"description", p.gemm.describe()}}},
        {"gemm_seconds", p.compute}, {"gemm_memory_bound_seconds", p.gemm_memory_bound},
        {"weights_from_memory_seconds", p.weights_from_memory},
        {"elementwise_seconds", p.elementwise},
        {"send_buffer_copies_seconds", p.send_buffer_copies}, {"optimizer_seconds", p.optimizer},
        {"param_fetch_seconds", p.param_fetch},
        {"data_loading_seconds", p.data_loading},
        {"bubble_seconds", p.bubble}, {"bubble_fraction", p.bubble_fraction},
        {"comm_seconds", p.comm}, {"exposed_comm_seconds", p.exposed_comm},
        {"memory_bytes", {{"parameters", p.memory.parameters},
                          {"gradients", p.memory.gradients},
                          {"optimizer", p.memory.optimizer},
                          {"activations", p.memory.activations},
                          {"buffers", p.memory.buffers},
                          {"total", p.memory.total()},
                          {"available", p.memory_available}}}};
    for (const auto& [key, comm] : p.collectives)
      row["collectives"][key] = {{"group_size", comm.group_size},
                                 {"inter_node", comm.inter_node}, {"bytes", comm.bytes},
                                 {"calls", comm.calls}, {"seconds", comm.seconds}};
    doc["candidates"].push_back(row);
  }
  const std::string text = doc.dump(1) + "\n";
  publish_file(path, std::span<const char>(text.data(), text.size()));
}

}  // namespace mlps
