// Timing of a kernel benchmark's loop apart from Google Benchmark's own clocks.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>

#include "src/device/device.h"

namespace mlps::kernel_bench {

#ifdef MLPSCALE_WITH_CUDA
// Start/stop events on the kernel stream, destroyed even when a kernel throws.
struct EventPair {
  void* start = cuda::event_create();
  void* stop = cuda::event_create();
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cuda::event_destroy(start);
    cuda::event_destroy(stop);
  }
};
#endif

// The timed loop; returns the seconds the kernel calls took in total: CUDA events around each
// call on the GPU (elapsed waits for the kernel, so launch and synchronisation overheads stay
// out), a steady clock around call + synchronize on the CPU (wall time, which also covers the
// work of OpenBLAS's other threads).
template <typename Kernel>
double time_kernel(benchmark::State& state, const Device& device, Kernel&& kernel) {
  double total_seconds = 0;
#ifdef MLPSCALE_WITH_CUDA
  if (device.kind() == DeviceKind::cuda) {
    EventPair events;
    for (auto _ : state) {
      cuda::event_record(events.start);
      kernel();
      cuda::event_record(events.stop);
      total_seconds += cuda::event_elapsed_seconds(events.start, events.stop);
    }
    return total_seconds;
  }
#endif
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    kernel();
    device.synchronize();
    total_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return total_seconds;
}

}  // namespace mlps::kernel_bench
