// Element-wise kernel benchmarks at the sizes the model runs them, the CPU optimizers' reference
// loops beside the optimizers, and a device copy, STREAM add and (CPU) a stream with Adam's
// read/write mix as the memory-bandwidth ceilings.
#pragma once

#include <cstdint>

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// Bytes per tensor of the bandwidth benchmarks: 256 MiB, far past any cache.
inline constexpr int64_t kStreamBytes = int64_t{256} << 20;

// Registers them for element type T (float or double) on `backend`.
template <typename T>
void register_elementwise_benchmarks(Backend backend, const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
