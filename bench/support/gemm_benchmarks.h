// GEMM benchmarks: every distinct shape of one training step, then a large square one.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// The square GEMM's side: the backend's compute ceiling at a size that fits any machine.
inline int64_t square_gemm_size(DeviceKind kind) { return kind == DeviceKind::cuda ? 4096 : 2048; }

// Registers them for element type T (float or double) on `backend`; with `peak_flops` > 0 (the
// CPU's FMA peak on the threads the GEMMs use), each also reports its rate as % of it.
template <typename T>
void register_gemm_benchmarks(Backend backend, const KernelBenchOptions& options,
                              double peak_flops);

}  // namespace mlps::kernel_bench
