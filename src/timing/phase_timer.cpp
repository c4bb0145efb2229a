#include "src/timing/phase_timer.h"

#include "src/timing/nvtx_range.h"
#include "src/timing/trace_recorder.h"

namespace mlps {

namespace {
constexpr int kPhases = static_cast<int>(Phase::count);

// The trace clock's reading of a host time point (both are steady_clock).
double seconds_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}
}  // namespace

const char* to_string(Phase phase) {
  static_assert(kPhases == 5, "one name per Phase, in its order");
  constexpr const char* kNames[] = {"forward", "backward", "optimizer", "data", "recompute"};
  return kNames[static_cast<int>(phase)];
}

std::vector<std::string> phase_names() {
  std::vector<std::string> names{"step"};
  for (int p = 0; p < kPhases; ++p) names.push_back(to_string(static_cast<Phase>(p)));
  return names;
}

PhaseTimer::PhaseTimer(const Device& device)
    : device_(device), host_start_(kPhases), host_seconds_(kPhases, 0.0), nvtx_open_(kPhases) {}

PhaseTimer::~PhaseTimer() {
#ifdef MLPSCALE_WITH_CUDA
  for (auto& e : events_) {
    cuda::event_destroy(e.start);
    cuda::event_destroy(e.stop);
  }
  for (void* e : spare_events_) cuda::event_destroy(e);
#endif
}

void* PhaseTimer::take_event() {
#ifdef MLPSCALE_WITH_CUDA
  if (spare_events_.empty()) return cuda::event_create();
  void* e = spare_events_.back();
  spare_events_.pop_back();
  return e;
#else
  return nullptr;
#endif
}

StepCounts PhaseTimer::totals() const {
  StepCounts counts{device_.allocations(), device_.frees(), {}};
#ifdef MLPSCALE_WITH_CUDA
  if (device_.kind() == DeviceKind::cuda) counts.runtime = cuda::runtime_counts();
#endif
  return counts;
}

void PhaseTimer::begin_iteration() {
  std::fill(host_seconds_.begin(), host_seconds_.end(), 0.0);
  start_counts_ = totals();
  iteration_start_ = Clock::now();
}

// Data loading is host work (generating or decoding samples), so it is host-timed everywhere.
bool PhaseTimer::on_device_events(Phase phase) const {
  return device_.kind() == DeviceKind::cuda && phase != Phase::data;
}

void PhaseTimer::start(Phase phase) {
  nvtx_open_[static_cast<int>(phase)].push_back(nvtx::start(to_string(phase)));
#ifdef MLPSCALE_WITH_CUDA
  if (on_device_events(phase)) {
    events_.push_back({take_event(), take_event(), phase});
    cuda::event_record(events_.back().start);
    return;
  }
#endif
  host_start_[static_cast<int>(phase)] = Clock::now();
}

void PhaseTimer::stop(Phase phase) {
  std::vector<uint64_t>& open = nvtx_open_[static_cast<int>(phase)];
  if (!open.empty()) {
    nvtx::end(open.back());
    open.pop_back();
  }
#ifdef MLPSCALE_WITH_CUDA
  if (on_device_events(phase)) {
    // The innermost open pair of this phase is the last one pushed for it.
    for (auto it = events_.rbegin(); it != events_.rend(); ++it)
      if (it->phase == phase) {
        cuda::event_record(it->stop);
        break;
      }
    return;
  }
#endif
  const Clock::time_point now = Clock::now(), start = host_start_[static_cast<int>(phase)];
  host_seconds_[static_cast<int>(phase)] += std::chrono::duration<double>(now - start).count();
  if (trace_) trace_->span(to_string(phase), seconds_of(start), seconds_of(now));
}

std::vector<double> PhaseTimer::end_iteration() {
  device_.synchronize();
  const Clock::time_point end = Clock::now();
  // The step ends here: reading its timing events afterwards is not the step's.
  const StepCounts now_counts = totals();
  const RuntimeCounts &a = start_counts_.runtime, &b = now_counts.runtime;
  step_counts_ = {now_counts.allocations - start_counts_.allocations,
                  now_counts.frees - start_counts_.frees,
                  {b.counted, b.launches - a.launches, b.allocations - a.allocations,
                   b.frees - a.frees, b.host_syncs - a.host_syncs}};
  const std::chrono::duration<double> step = end - iteration_start_;
#ifdef MLPSCALE_WITH_CUDA
  // The trace places GPU events on the host clock: the idle device passes `now` at once, so
  // the host's reading once it has is the event's time (to a few microseconds).
  void* now = trace_ && !events_.empty() ? take_event() : nullptr;
  double host_now = 0;
  if (now) {
    cuda::event_record(now);
    cuda::event_elapsed_seconds(now, now);  // waits for it
    host_now = CommLog::steady_seconds();
  }
  for (auto& e : events_) {
    host_seconds_[static_cast<int>(e.phase)] += cuda::event_elapsed_seconds(e.start, e.stop);
    if (now)
      trace_->span(to_string(e.phase),
                   host_now - cuda::event_elapsed_seconds(e.start, now),
                   host_now - cuda::event_elapsed_seconds(e.stop, now));
    spare_events_.push_back(e.start);
    spare_events_.push_back(e.stop);
  }
  events_.clear();
  if (now) spare_events_.push_back(now);
#endif
  if (trace_) trace_->step(seconds_of(iteration_start_), seconds_of(end));
  std::vector<double> seconds{step.count()};
  seconds.insert(seconds.end(), host_seconds_.begin(), host_seconds_.end());
  return seconds;
}

}  // namespace mlps
