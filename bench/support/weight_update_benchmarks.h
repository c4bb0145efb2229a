// The weight update of each Linear shape of the model, fused into backward (a block of dW rows
// at a time, updated while in cache) against separate (dW whole, then the optimizer): the CPU's
// real LinearLayer and Adam, side by side, so the fused path's gain or loss shows per shape.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

template <typename T>
void register_weight_update_benchmarks(Backend backend, const KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
