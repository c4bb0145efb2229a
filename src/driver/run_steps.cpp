#include "src/driver/run_steps.h"

#include <cstdio>

namespace mlps {

std::vector<std::string> run_timing_names(const Trainer& trainer) {
  std::vector<std::string> names = phase_names();
  names.push_back("exposed_comm");
  for (const auto& name : trainer.extra_timing_names()) names.push_back(name);
  return names;
}

std::vector<double> record_iteration(PhaseTimer& timer, Trainer& trainer,
                                     IterationRecorder& recorder) {
  std::vector<double> seconds = timer.end_iteration();
  seconds.push_back(trainer.take_blocked_comm_seconds());
  for (double extra : trainer.take_extra_timings()) seconds.push_back(extra);
  recorder.add(seconds, trainer.take_comm_totals());
  return seconds;
}

int finish_run(const RunContext& context, const std::string& out_path, const RunRecord& record) {
  int exit_code = 0;
  if (context.is_root()) {
    if (record.verification.verdict == "FAIL") exit_code = 3;
    write_results_hdf5(out_path, record);
    std::printf("results: %s\n", out_path.c_str());
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, context.comm);
  return exit_code;
}

}  // namespace mlps
