#include "src/plan/run_prediction.h"

#include <filesystem>

#include "src/plan/step_prediction.h"

namespace mlps {

std::string machine_file_for_run(const std::string& option) {
  if (option == "none") return "";
  if (!option.empty()) return option;
  std::error_code error;
  return std::filesystem::exists(kCalibratedMachineFile, error) ? kCalibratedMachineFile : "";
}

RecordedPrediction predict_run(const PlanCandidate& candidate, const std::string& machine_file) {
  const MachineDescription machine = load_machine_description(machine_file);
  const StepPrediction p = predict_step(candidate, machine);
  RecordedPrediction r;
  r.machine = machine.name;
  r.machine_file = machine_file;
  r.oversubscribed = machine.ranks_share_node && candidate.ranks_on_node > machine.ranks_per_node;
  r.figures = {{"step_seconds", p.step},
               {"compute_seconds", p.work()},
               {"optimizer_seconds", p.optimizer},
               {"param_fetch_seconds", p.param_fetch},
               {"comm_seconds", p.comm},
               {"exposed_comm_seconds", p.exposed_comm},
               {"bubble_seconds", p.bubble},
               {"bubble_fraction", p.bubble_fraction},
               {"peak_bytes", p.memory.total()},
               {"samples_per_second", p.samples_per_second}};
  // Each collective's time and link, as the run's groups sit on its nodes.
  for (const auto& [key, comm] : p.collectives) {
    r.figures["comm_seconds:" + key] = comm.seconds;
    r.figures["inter_node:" + key] = comm.inter_node ? 1 : 0;
  }
  return r;
}

}  // namespace mlps
