#pragma once
// One rank's measurements of every iteration (phase times, exposed communication, a scheme's
// extra timings, and bytes, time and calls per collective), assembled on rank 0 into the
// [iterations × ranks] tables of the result file.
#include <map>
#include <string>
#include <vector>

#include "src/comm/comm_log.h"
#include "src/driver/run_context.h"
#include "src/results/run_record.h"

namespace mlps {

class IterationRecorder {
 public:
  // The names of the timing values each iteration adds, the same on every rank.
  explicit IterationRecorder(std::vector<std::string> timing_names)
      : timing_names_(std::move(timing_names)) {}

  void add(std::vector<double> timings, std::map<std::string, CommTotals> comm);
  int64_t iterations() const { return static_cast<int64_t>(timings_.size()); }

  // Collective over context.comm: fills record.timing and record.comm on rank 0. A collective
  // that only some ranks or iterations used still gets a full table (zeros elsewhere).
  void gather_into(const RunContext& context, RunRecord& record) const;

 private:
  std::vector<std::string> timing_names_;
  std::vector<std::vector<double>> timings_;
  std::vector<std::map<std::string, CommTotals>> comm_;
};

}  // namespace mlps
