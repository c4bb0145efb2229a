// GEMM benchmarks: every distinct shape of one training step, then a large square one.
#pragma once

#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"

namespace mlps::kernel_bench {

// The square GEMM's side: the backend's compute ceiling at a size that fits any machine.
inline int64_t square_gemm_size(DeviceKind kind) { return kind == DeviceKind::cuda ? 4096 : 2048; }

// Registers them for element type T (float, double, or bf16: 16-bit inputs and output, fp32
// accumulation, as typed mixed precision runs them) on `backend`, named by `type` ("tf32" for
// float on a Device whose math is TF32); with `peak_flops` > 0 (the CPU's FMA peak on the
// threads the GEMMs use), each also reports its rate as % of it.
template <typename T>
void register_gemm_benchmarks(Backend backend, const KernelBenchOptions& options,
                              double peak_flops, const char* type = type_name<T>());

}  // namespace mlps::kernel_bench
