#include "bench/support/kernel_bench_memory.h"

#include <algorithm>

#include "bench/support/elementwise_benchmarks.h"
#include "bench/support/weight_restream_benchmarks.h"
#include "src/model/fused_weight_update.h"

namespace mlps::kernel_bench {

double largest_benchmark_bytes(const KernelBenchOptions& options, int64_t square_gemm) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const auto set = [](double tensors, double largest) { return tensors + largest; };
  const double square = d(square_gemm) * d(square_gemm);
  double elements = set(3 * square, square);
  for (const GemmShape& g : training_step_gemms(options.model, options.batch)) {
    const double a = d(g.m) * d(g.k), b = d(g.k) * d(g.n), c = d(g.m) * d(g.n);
    elements = std::max(elements, set(a + b + c, std::max({a, b, c})));
  }
  double weight = 0;
  for (const LinearShape& s : linear_shapes(options.model)) weight = std::max(weight, d(s.in) * d(s.out));
  elements = std::max(elements, set(4 * weight, weight));
  // weight_update: the weight's value, gradient and moments, the fused block, and the input and
  // output gradient rows.
  for (const LinearShape& s : linear_shapes(options.model)) {
    const double w = d(s.in) * d(s.out);
    const double rest = d(fused_block_elements(s.in, 8)) + d(options.batch) * d(s.in + s.out);
    elements = std::max(elements, set(4 * w + rest, w));
  }
  // weight_restream: a weight and its gradient per set, the model's worth (about 2 parameters).
  elements = std::max(elements, set(2 * d(restream_weight_sets(options.model)) * weight +
                                        2 * d(options.batch) * d(options.model.ffn_hidden() +
                                                                 options.model.hidden),
                                    weight));
  const double rows_ffn = d(options.batch) * d(options.model.ffn_hidden());
  elements = std::max(elements, set(3 * rows_ffn, rows_ffn));
  const double stream = d(kStreamBytes) / 8;  // stream_add's three tensors, in fp64 elements
  elements = std::max(elements, set(3 * stream, stream));
  return elements * 8;
}

}  // namespace mlps::kernel_bench
