// A kernel benchmark as a recipe (tensors to allocate, kernel to call, rate counter), and its
// registration with Google Benchmark under a name "kernel/backend/type/shape".
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/support/kernel_inputs.h"
#include "bench/support/kernel_timing.h"
#include "src/device/device.h"

namespace mlps::kernel_bench {

template <typename T>
struct KernelBench {
  std::string name;
  std::vector<TensorSpec> tensors;
  int64_t label_count = 0;
  int64_t classes = 0;
  std::function<void(const Device&, Tensors<T>&)> call;
  const char* counter = "GB/s";  // "TFLOP/s" for GEMMs
  double counter_units = 0;      // per call, in 1e9 bytes or 1e12 flops
  double peak_units = 0;         // > 0: also "% of peak", the TFLOP/s rate over this ceiling
  benchmark::TimeUnit unit = benchmark::kMicrosecond;
  std::string label;
};

// The device a benchmark runs on and the cache its inputs live in.
struct Backend {
  Device& device;
  InputCache& cache;
};

// Rate counters are set from time_kernel's total and the iteration count, so that they are plain
// per-second values in the counter's units (a kIsRate counter would print a second "/s").
// No MinTime()/UseManualTime() here: Google Benchmark would append "/min_time:.../manual_time"
// to every name; the default minimum time is a flag instead (see bench_kernels' run()). The
// iteration count is then settled on the main thread's CPU time, which tracks wall time here: it
// takes part in OpenBLAS's GEMMs, and CUDA spins while waiting for an event in a one-context
// process.
template <typename T>
void register_bench(Backend backend, KernelBench<T> bench) {
  auto fn = [backend, bench](benchmark::State& state) {
    auto [inputs, fresh] = backend.cache.get<Tensors<T>>(bench.name, [&] {
      return make_tensors<T>(backend.device, bench.tensors, bench.label_count, bench.classes);
    });
    auto call = [&] { bench.call(backend.device, inputs); };
    if (fresh) {  // warm-up: first-call costs (cuBLAS handles, page faults) stay out of timing
      call();
      backend.device.synchronize();
    }
    const double seconds = time_kernel(state, backend.device, call);
    const double rate =
        seconds > 0 ? bench.counter_units * static_cast<double>(state.iterations()) / seconds : 0.0;
    state.counters[bench.counter] = rate;
    if (bench.peak_units > 0) state.counters["% of peak"] = 100 * rate / bench.peak_units;
    if (!bench.label.empty()) state.SetLabel(bench.label);
  };
  benchmark::RegisterBenchmark(bench.name.c_str(), fn)->Unit(bench.unit);
}

// Pieces of benchmark names: "kernel/backend/type/", "rows:R/cols:C", "n:N".
inline std::string bench_prefix(const char* kernel, const Device& device, const char* type) {
  return std::string(kernel) + "/" + to_string(device.kind()) + "/" + type + "/";
}
inline std::string rows_cols(int64_t rows, int64_t cols) {
  return "rows:" + std::to_string(rows) + "/cols:" + std::to_string(cols);
}
inline std::string element_count(int64_t n) { return "n:" + std::to_string(n); }

}  // namespace mlps::kernel_bench
