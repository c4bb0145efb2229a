#include "bench/support/weight_restream_benchmarks.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "src/model/model_config.h"

namespace mlps::kernel_bench {
namespace {

// The largest Linear of the model (the FFN's, in a block) by weight elements.
LinearShape largest_linear(const ModelConfig& model) {
  const auto shapes = linear_shapes(model);
  return *std::max_element(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return a.in * a.out < b.in * b.out;
  });
}

// Tensors: x (rows × in), dy (rows × out), y (rows × out), dx (rows × in), then per set its weight
// W (out × in) and weight gradient dW (out × in). A call is one micro-batch's pass over `sets`
// layers of this shape: the forward GEMMs in layer order, then the input- and weight-gradient
// GEMMs in reverse (so the backward pass starts on the weights the forward read last). The GB/s
// counter is the weights' bytes per second: over many sets it is what re-reading them costs.
template <typename T>
void register_restream(Backend backend, const LinearShape& s, int64_t rows, int64_t sets) {
  KernelBench<T> b;
  b.name = bench_prefix("weight_restream", backend.device, type_name<T>()) +
           "rows:" + std::to_string(rows) + "/out:" + std::to_string(s.out) + "/in:" +
           std::to_string(s.in) + "/sets:" + std::to_string(sets);
  b.tensors = {{rows * s.in}, {rows * s.out}, {rows * s.out}, {rows * s.in}};
  for (int64_t i = 0; i < 2 * sets; ++i) b.tensors.emplace_back(s.out * s.in);
  b.call = [s, rows, sets](const Device& d, Tensors<T>& t) {
    const auto weight = [](int64_t set) { return 4 + 2 * static_cast<size_t>(set); };
    for (int64_t i = 0; i < sets; ++i)
      d.gemm<T>(false, true, rows, s.out, s.in, T(1), t[0], s.in, t[weight(i)], s.in, T(0), t[2],
                s.out);
    for (int64_t i = sets - 1; i >= 0; --i) {
      d.gemm<T>(false, false, rows, s.in, s.out, T(1), t[1], s.out, t[weight(i)], s.in, T(0),
                t[3], s.in);
      d.gemm<T>(true, false, s.out, s.in, rows, T(1), t[1], s.out, t[0], s.in, T(1),
                t[weight(i) + 1], s.in);
    }
  };
  b.counter = "GB/s";
  b.counter_units = static_cast<double>(sets * s.out * s.in * sizeof(T)) / 1e9;
  b.unit = benchmark::kMillisecond;
  b.label = sets == 1 ? "one weight, again and again" : "the model's worth of weights in turn";
  register_bench<T>(backend, std::move(b));
}

}  // namespace

int64_t restream_weight_sets(const ModelConfig& model) {
  const LinearShape s = largest_linear(model);
  const int64_t weight = s.in * s.out;
  return std::max<int64_t>(2, (parameter_count(model) + weight - 1) / weight);
}

// fp32 only: what a planner's calibration reads (bin/plan --calibrate), at half fp64's memory.
template <typename T>
void register_weight_restream_benchmarks(Backend backend, const KernelBenchOptions& options) {
  if (!std::is_same_v<T, float>) return;
  const LinearShape s = largest_linear(options.model);
  for (int64_t sets : {int64_t{1}, restream_weight_sets(options.model)})
    register_restream<T>(backend, s, options.batch, sets);
}

template void register_weight_restream_benchmarks<float>(Backend, const KernelBenchOptions&);
template void register_weight_restream_benchmarks<double>(Backend, const KernelBenchOptions&);

}  // namespace mlps::kernel_bench
