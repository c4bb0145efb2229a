#pragma once
// The memory bin/bench_kernels needs at once: InputCache keeps one benchmark's inputs, so the
// largest benchmark's set in fp64 (the larger type), plus the host vector it is uploaded from.
#include "bench/support/kernel_bench_options.h"

namespace mlps::kernel_bench {

// Bytes of the largest set: a GEMM's A, B and C at the model's shapes or the square reference
// size, the optimizers' four tensors of the largest weight, the element-wise kernels' three of
// rows × F, the bandwidth benchmarks' three of kStreamBytes; each plus one tensor staged on the
// host.
double largest_benchmark_bytes(const KernelBenchOptions& options, int64_t square_gemm);

}  // namespace mlps::kernel_bench
