#include "src/driver/run_timeline.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "src/driver/training_driver.h"
#include "src/base/errors.h"

namespace mlps {

RunTimeline::RunTimeline(const RunContext& context, const Options& o, PhaseTimer& timer,
                         Trainer& trainer)
    : timer_(timer), trainer_(trainer) {
  if (o.trace.empty()) return;
  if (o.trace == o.out)
    throw InputError("--trace " + o.trace + " is also --out: name another file");
  check_output_path(context, o.trace, "--trace", "run.trace.json");
  recorder_.emplace(context.comm);
  timer_.set_trace(&*recorder_);
  trainer_.set_comm_event_sink(&*recorder_);
}

RunTimeline::~RunTimeline() {
  if (!recorder_) return;
  timer_.set_trace(nullptr);
  trainer_.set_comm_event_sink(nullptr);
}

void RunTimeline::evaluation(double start) {
  if (recorder_) recorder_->span("evaluation", start, TraceRecorder::now());
}

void RunTimeline::write(const RunContext& context, const Options& o,
                        const Trainer& trainer) const {
  if (!recorder_) return;
  long long events = static_cast<long long>(recorder_->event_count()), all = 0;
  MPI_Reduce(&events, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, context.comm);
  const nlohmann::json other = {
      {"program", context.program}, {"scheme", trainer.scheme()}, {"grid", trainer.grid()},
      {"ranks", context.size}, {"command_line", context.command_line},
      {"warmup_iterations", o.warmup}, {"mode", o.inference ? "inference" : "train"},
      {"clock", "steady_clock from an origin taken after a barrier: exact across the ranks on "
                "rank 0's host, within the barrier's exit skew on other hosts"}};
  const size_t bytes = recorder_->write(o.trace, other.dump(), o.warmup);
  if (context.is_root())
    std::printf("trace: %s (%lld events from %d rank%s, %.1f KiB)\n", o.trace.c_str(), all,
                context.size, context.size == 1 ? "" : "s", static_cast<double>(bytes) / 1024);
}

}  // namespace mlps
