// The processor's own ceiling for GEMMs: independent fused multiply-adds in the widest vector
// registers it has, on one core, with nothing read from memory. bench_kernels reports each CPU
// GEMM against it, and bench_floor builds its machine floor from it (docs/cpu-blas.md).
#pragma once

#include <string>

namespace mlps::kernel_bench {

struct FmaPeak {
  double flops_per_second = 0;  // one core
  std::string isa;              // "avx512", "avx2", "sse2" (multiply and add, no FMA)
};

// The fastest of timed runs over about `seconds`, on the calling thread, in float or double.
template <typename T>
FmaPeak measure_fma_peak(double seconds = 0.2);

// fma_peak/cpu/<f32|f64>/<isa>: the one-core peak as a benchmark with a TFLOP/s counter, so that
// the JSON bench_floor reads carries it.
void register_fma_peak_benchmarks();

}  // namespace mlps::kernel_bench
