#include "bench/support/gemm_benchmarks.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/model/model_config.h"

namespace mlps::kernel_bench {
namespace {

template <typename T>
void register_gemm(Backend backend, const GemmShape& s, const std::string& label,
                   double peak_flops, const char* type) {
  const int64_t lda = s.trans_a ? s.m : s.k;  // A is stored k×m when transposed, else m×k
  const int64_t ldb = s.trans_b ? s.k : s.n;  // B is stored n×k when transposed, else k×n
  std::string name = bench_prefix("gemm", backend.device, type);
  name += s.trans_a ? 'T' : 'N';
  name += s.trans_b ? 'T' : 'N';
  name += "/m:" + std::to_string(s.m) + "/n:" + std::to_string(s.n) + "/k:" + std::to_string(s.k);
  KernelBench<T> b;
  b.name = name;
  b.tensors = {{s.m * s.k}, {s.k * s.n}, {s.m * s.n}};
  b.call = [s, lda, ldb](const Device& d, Tensors<T>& t) {
    d.gemm<T>(s.trans_a, s.trans_b, s.m, s.n, s.k, Acc<T>(1), t[0], lda, t[1], ldb,
              Acc<T>(s.beta), t[2], s.n);
  };
  b.counter = "TFLOP/s";
  b.counter_units = s.flops() / 1e12;
  b.peak_units = peak_flops / 1e12;
  b.unit = benchmark::kMillisecond;
  b.label = label;
  register_bench<T>(backend, std::move(b));
}

}  // namespace

// Each distinct shape is labelled with how often a step runs it and the first layer that does;
// the square one is the backend's compute ceiling.
template <typename T>
void register_gemm_benchmarks(Backend backend, const KernelBenchOptions& options,
                              double peak_flops, const char* type) {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t>;
  std::vector<std::pair<GemmShape, int>> distinct;
  for (const auto& s : training_step_gemms(options.model, options.batch)) {
    bool seen = false;
    for (auto& [shape, uses] : distinct) {
      if (Key{shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k} ==
          Key{s.trans_a, s.trans_b, s.m, s.n, s.k}) {
        ++uses;
        seen = true;
        break;
      }
    }
    if (!seen) distinct.push_back({s, 1});
  }
  const int64_t square = square_gemm_size(backend.device.kind());
  const GemmShape big{"square", false, false, square, square, square};
  bool big_is_model_shape = false;
  for (const auto& [s, uses] : distinct) {
    register_gemm<T>(backend, s, std::to_string(uses) + "x per step, e.g. " + s.name, peak_flops,
                     type);
    big_is_model_shape |= !s.trans_a && !s.trans_b && s.m == square && s.n == square && s.k == square;
  }
  if (!big_is_model_shape) register_gemm<T>(backend, big, "square", peak_flops, type);
}

template void register_gemm_benchmarks<float>(Backend, const KernelBenchOptions&, double,
                                              const char*);
template void register_gemm_benchmarks<double>(Backend, const KernelBenchOptions&, double,
                                               const char*);
template void register_gemm_benchmarks<bf16>(Backend, const KernelBenchOptions&, double,
                                             const char*);

}  // namespace mlps::kernel_bench
