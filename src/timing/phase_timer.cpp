#include "src/timing/phase_timer.h"

namespace mlps {

namespace {
constexpr int kPhases = static_cast<int>(Phase::count);
}

std::vector<std::string> phase_names() {
  static_assert(kPhases == 5, "one name per Phase, in its order");
  return {"step", "forward", "backward", "optimizer", "data", "recompute"};
}

PhaseTimer::PhaseTimer(const Device& device)
    : device_(device), host_start_(kPhases), host_seconds_(kPhases, 0.0) {}

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

void PhaseTimer::begin_iteration() {
  std::fill(host_seconds_.begin(), host_seconds_.end(), 0.0);
  iteration_start_ = Clock::now();
}

// Data loading is host work (generating or decoding samples), so it is host-timed everywhere.
bool PhaseTimer::on_device_events(Phase phase) const {
  return device_.kind() == DeviceKind::cuda && phase != Phase::data;
}

void PhaseTimer::start(Phase phase) {
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
  const std::chrono::duration<double> d = Clock::now() - host_start_[static_cast<int>(phase)];
  host_seconds_[static_cast<int>(phase)] += d.count();
}

std::vector<double> PhaseTimer::end_iteration() {
  device_.synchronize();
  const std::chrono::duration<double> step = Clock::now() - iteration_start_;
#ifdef MLPSCALE_WITH_CUDA
  for (auto& e : events_) {
    host_seconds_[static_cast<int>(e.phase)] += cuda::event_elapsed_seconds(e.start, e.stop);
    spare_events_.push_back(e.start);
    spare_events_.push_back(e.stop);
  }
  events_.clear();
#endif
  std::vector<double> seconds{step.count()};
  seconds.insert(seconds.end(), host_seconds_.begin(), host_seconds_.end());
  return seconds;
}

}  // namespace mlps
