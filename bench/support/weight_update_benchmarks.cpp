#include "bench/support/weight_update_benchmarks.h"

#include <mpi.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_traffic.h"
#include "src/model/linear_layer.h"
#include "src/optim/optimizer.h"

namespace mlps::kernel_bench {
namespace {

// One step of one Linear's dW, db and Adam update (no dx: as the embed), fused or separate (as
// bin/serial runs it: dW added into the gradient the previous update zeroed). The GB/s counter
// is Adam's traffic over the weight (7 elements each) per second of the whole, so both variants
// count the same bytes and the faster shows the higher rate.
template <typename T>
void register_update(Device& device, int64_t out, int64_t in, int64_t rows, bool fused) {
  const std::string name = bench_prefix("weight_update", device, type_name<T>()) +
                           (fused ? "fused" : "separate") + "/out:" + std::to_string(out) +
                           "/in:" + std::to_string(in) + "/rows:" + std::to_string(rows);
  auto fn = [&device, out, in, rows, fused](benchmark::State& state) {
    ParameterList<T> params(device, ParameterStorage::owned);
    Optimizer<T> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
    if (fused) optimizer.enable_fused_update(fused_block_elements(in, sizeof(T)));
    LinearLayer<T> layer(device, params, "w", in, out, fused ? &optimizer : nullptr);
    params.initialise(1);
    for (auto& p : params) optimizer.add(p->value.data(), p->grad.data(), p->size());
    if (!fused) optimizer.zero_gradients_after_step();
    Buffer<T> x(device, rows * in), dy(device, rows * out);
    x.upload(std::vector<T>(rows * in, T(0.5)));
    dy.upload(std::vector<T>(rows * out, T(0.01)));
    const auto step = [&] {
      if (fused) optimizer.open_step();
      layer.backward(x.data(), dy.data(), nullptr, rows, optimizer.gradients_zeroed());
      optimizer.step();
    };
    step();  // first touches out of the timing
    const double seconds = time_kernel(state, device, step);
    state.counters["GB/s"] = seconds > 0 ? traffic::adam_update(out * in) * sizeof(T) *
                                               static_cast<double>(state.iterations()) /
                                               seconds / 1e9
                                         : 0.0;
  };
  benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond);
}

}  // namespace

// CPU only: the update is fused only there (fused_update_applies).
template <typename T>
void register_weight_update_benchmarks(Backend backend, const KernelBenchOptions& options) {
  if (!fused_update_applies(backend.device.kind(), StorageFormat::full)) return;
  std::set<std::pair<int64_t, int64_t>> shapes;
  for (const auto& s : linear_shapes(options.model))
    if (shapes.insert({s.out, s.in}).second)
      for (bool fused : {false, true})
        register_update<T>(backend.device, s.out, s.in, options.batch, fused);
}

template void register_weight_update_benchmarks<float>(Backend, const KernelBenchOptions&);
template void register_weight_update_benchmarks<double>(Backend, const KernelBenchOptions&);

}  // namespace mlps::kernel_bench
