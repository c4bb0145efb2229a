#pragma once
// One rank's measurements of every iteration (phase times, exposed communication, a scheme's
// extra timings, bytes, time and calls per collective, and the step's device counts), assembled
// on rank 0 into the [iterations × ranks] tables of the result file.
#include <map>
#include <string>
#include <vector>

#include "src/driver/run_context.h"
#include "src/results/run_record.h"
#include "src/schemes/trainer.h"

namespace mlps {

class IterationRecorder {
 public:
  // Records every phase, "exposed_comm", then the trainer's extra timings: the same on every rank.
  explicit IterationRecorder(const Trainer& trainer);

  // Ends the timer's iteration and records it with the trainer's blocked time, extra timings and
  // communication totals; returns the iteration's timings (step first).
  std::vector<double> end_iteration(PhaseTimer& timer, Trainer& trainer);

  // Collective over context.comm: fills record.timing, record.comm and every rank's peak and
  // estimated bytes on rank 0. A collective that only some ranks or iterations used still gets
  // a full table (zeros elsewhere).
  void gather_into(const RunContext& context, const Trainer& trainer, RunRecord& record) const;

 private:
  std::vector<std::string> timing_names_;
  std::vector<std::vector<double>> timings_;
  std::vector<std::map<std::string, CommTotals>> comm_;
  std::vector<StepCounts> counts_;
};

}  // namespace mlps
