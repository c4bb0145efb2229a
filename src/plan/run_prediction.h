#pragma once
// A run's own prediction: what bin/plan's model says for the configuration an executable is
// about to run, on the machine description --machine names, recorded in its result file
// (/prediction) and printed beside the measurement in its summary.
#include <string>

#include "src/plan/plan_candidates.h"
#include "src/results/run_record.h"

namespace mlps {

// The description a run uses when --machine is not given: this machine's, once calibrated
// (`make calibrate`), relative to where the run starts (the repository root).
inline constexpr const char* kCalibratedMachineFile = "inputs/machines/local.json";

// The file --machine `option` names: the option's, none for "none", else the calibrated one
// when it exists (empty: no prediction).
std::string machine_file_for_run(const std::string& option);

// The prediction for `candidate` (its ranks_on_node and threads_per_rank as the run places
// them) on the description in `machine_file`; InputError naming the file when it is malformed.
RecordedPrediction predict_run(const PlanCandidate& candidate, const std::string& machine_file);

}  // namespace mlps
