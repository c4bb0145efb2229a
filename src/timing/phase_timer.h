#pragma once
// Per-iteration phase times on one rank. On the CPU a phase is host-clock time; on the GPU it
// is CUDA-event time on the kernel stream, read once at the end of the iteration so timing
// never adds a synchronisation inside the step. Phases may be entered several times per
// iteration (micro-batches); their times add up.
#include <chrono>
#include <string>
#include <vector>

#include "src/device/device.h"

namespace mlps {

class TraceRecorder;

// recompute (activation checkpointing) runs inside backward: its time is part of backward's too.
enum class Phase { forward, backward, optimizer, data, recompute, count };
std::vector<std::string> phase_names();  // "step" first, then every Phase
const char* to_string(Phase phase);      // "forward", ...

// What one step asked of its device beyond the work: the Device's allocations and frees (every
// backend) and, where the runtime counts them (the emulated GPU build, --device cuda), its
// kernel launches, allocations, frees and host synchronisations, the step's closing one
// included. A steady-state step allocates and frees nothing and synchronises once.
struct StepCounts {
  int64_t allocations = 0;
  int64_t frees = 0;
  RuntimeCounts runtime;
};

class PhaseTimer {
 public:
  explicit PhaseTimer(const Device& device);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  void begin_iteration();
  void start(Phase phase);
  void stop(Phase phase);
  // Waits for the device, then returns seconds per name of phase_names() ("step" is the whole
  // iteration's host-clock time).
  std::vector<double> end_iteration();
  // The counts of the iteration end_iteration closed.
  const StepCounts& step_counts() const { return step_counts_; }
  // Also records every phase and each iteration as a whole into `trace` (null: none).
  void set_trace(TraceRecorder* trace) { trace_ = trace; }

 private:
  using Clock = std::chrono::steady_clock;
  struct EventPair { void* start; void* stop; Phase phase; };
  const Device& device_;
  Clock::time_point iteration_start_;
  std::vector<Clock::time_point> host_start_;
  std::vector<double> host_seconds_;
  std::vector<EventPair> events_;  // CUDA: recorded this iteration
  std::vector<void*> spare_events_;
  TraceRecorder* trace_ = nullptr;  // not owned
  std::vector<std::vector<uint64_t>> nvtx_open_;  // per phase: its open NVTX ranges
  StepCounts start_counts_;  // totals so far at begin_iteration
  StepCounts step_counts_;
  StepCounts totals() const;
  void* take_event();
  bool on_device_events(Phase phase) const;
};

// Times one phase for the lifetime of the scope.
class ScopedPhase {
 public:
  ScopedPhase(PhaseTimer& timer, Phase phase) : timer_(timer), phase_(phase) { timer_.start(phase_); }
  ~ScopedPhase() { timer_.stop(phase_); }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  PhaseTimer& timer_;
  Phase phase_;
};

}  // namespace mlps
