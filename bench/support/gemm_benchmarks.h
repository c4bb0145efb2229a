// GEMM benchmarks: every distinct shape of one training step, then a large square one.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// Registers them for element type T (float or double) on `backend`.
template <typename T>
void register_gemm_benchmarks(Backend backend, const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
