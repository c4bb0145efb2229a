// Element-wise kernel benchmarks at the sizes the model runs them, plus a device copy as the
// memory-bandwidth ceiling.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// Registers them for element type T (float or double) on `backend`.
template <typename T>
void register_elementwise_benchmarks(Backend backend, const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
