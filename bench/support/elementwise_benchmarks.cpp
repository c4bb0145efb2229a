#include "bench/support/elementwise_benchmarks.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/parallel_loops.h"
#include "kernels/cpu/reference_optimizer.h"
#include "kernels/kernel_traffic.h"
#include "src/model/model_config.h"

namespace mlps::kernel_bench {
namespace {

template <typename T>
MLPS_VECTOR_CLONES void update_chunk(T* __restrict p, const T* __restrict g, T* __restrict m,
                                     T* __restrict v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    p[i] += g[i];
    m[i] += g[i];
    v[i] += g[i];
  }
}

// On the rank's threads, as the CPU kernels split their loops.
template <typename T>
void update_stream(T* p, const T* g, T* m, T* v, int64_t n) {
  cpu::detail::parallel_elements(n, [&](int64_t i0, int64_t i1) {
    update_chunk(p + i0, g + i0, m + i0, v + i0, i1 - i0);
  });
}

}  // namespace

// Element-wise kernels at the sizes the model runs them; each GB/s counter counts every input
// read once and every output written once (kernels/kernel_traffic.h, which the floor uses too).
template <typename T>
void register_elementwise_benchmarks(Backend backend, const KernelBenchOptions& options) {
  using Call = std::function<void(const Device&, Tensors<T>&)>;
  const char* type = type_name<T>();
  const double size = sizeof(T);
  const int64_t rows = options.batch;
  const int64_t ffn = options.model.ffn_hidden();
  const int64_t hidden = options.model.hidden;
  const int64_t classes = options.model.classes;
  // `labels`: the benchmark also gets `rows` class labels in [0, classes).
  auto add = [&](const char* kernel, const std::string& shape, std::vector<TensorSpec> tensors,
                 double bytes, Call call, bool labels = false) {
    KernelBench<T> b;
    b.name = bench_prefix(kernel, backend.device, type) + shape;
    b.tensors = std::move(tensors);
    b.label_count = labels ? rows : 0;
    b.classes = classes;
    b.call = std::move(call);
    b.counter_units = bytes / 1e9;
    register_bench<T>(backend, std::move(b));
  };

  {  // on fc1's output
    const int64_t r = rows, c = ffn;
    add("bias_add", rows_cols(r, c), {r * c, c}, traffic::bias_add(r, c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_add<T>(t[0], t[1], r, c); });
    add("bias_grad", rows_cols(r, c), {c, r * c}, traffic::bias_grad(r, c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_grad<T>(t[0], t[1], r, c, false); });
  }
  {  // the ReLU between fc1 and fc2
    const int64_t n = rows * ffn;
    add("relu_forward", element_count(n), {n, n}, traffic::relu_forward(n) * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_forward<T>(t[0], t[1], n); });
    add("relu_backward", element_count(n), {n, n, n}, traffic::relu_backward(n) * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_backward<T>(t[0], t[1], t[2], n); });
  }
  {  // the block's residual, on hidden-wide activations
    const int64_t n = rows * hidden;
    add("residual_add", element_count(n), {n, n, n}, traffic::residual_add(n) * size,
        [n](const Device& d, Tensors<T>& t) { d.residual_add<T>(t[0], t[1], t[2], n); });
  }
  {  // LayerNorm(hidden)
    const int64_t r = rows, c = hidden;
    add("layernorm_forward", rows_cols(r, c), {r * c, r, r, r * c, c, c},
        traffic::layernorm_forward(r, c) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_forward<T>(t[0], t[1], t[2], t[3], t[4], t[5], r, c, 1e-5);
        });
    add("layernorm_backward", rows_cols(r, c), {r * c, c, c, r * c, r * c, r, {r, true}, c},
        traffic::layernorm_backward(r, c) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_backward<T>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], r, c, false);
        });
  }
  {  // the classifier's loss
    const int64_t r = rows, c = classes;
    add("softmax_xent_forward", rows_cols(r, c), {r * c, r, r * c},
        traffic::softmax_xent_forward(r, c) * size + traffic::label_bytes(r),
        [r, c](const Device& d, Tensors<T>& t) {
          d.softmax_xent_forward<T>(t[0], t[1], t[2], t.labels.data(), r, c);
        },
        true);
    add("softmax_xent_backward", rows_cols(r, c), {r * c, {r * c, true}},
        traffic::softmax_xent_backward(r, c) * size + traffic::label_bytes(r),
        [r, c](const Device& d, Tensors<T>& t) {
          d.softmax_xent_backward<T>(t[0], t[1], t.labels.data(), r, c, 1.0 / r);
        },
        true);
  }
  {  // the optimizers on the largest weight (fc1's, 16M elements, at the tutorial's config);
     // bin/bench_floor looks this size up to rate the whole step's update
    int64_t n = 0;
    for (const auto& s : linear_shapes(options.model)) n = std::max(n, s.in * s.out);
    AdamStep step;
    step.bias_correction1 = 1.0 - 0.9;  // t = 1 (the values do not change the work)
    step.bias_correction2 = 1.0 - 0.999;
    add("adam_update", element_count(n), {n, n, n, {n, true}}, traffic::adam_update(n) * size,
        [n, step](const Device& d, Tensors<T>& t) {
          d.adam_update<T>(t[0], t[1], t[2], t[3], n, step);
        });
    add("sgd_update", element_count(n), {n, n}, traffic::sgd_update(n) * size,
        [n](const Device& d, Tensors<T>& t) { d.sgd_update<T>(t[0], t[1], n, 1e-3); });
    if (backend.device.kind() == DeviceKind::cpu) {
      // The same updates by the single-thread baseline loops they replaced, side by side, so
      // that the ratio of the GB/s shows what threads and vector width bring (or a regression).
      add("adam_update_reference", element_count(n), {n, n, n, {n, true}},
          traffic::adam_update(n) * size,
          [n, step](const Device&, Tensors<T>& t) {
            cpu::reference::adam_update<T>(t[0], t[1], t[2], t[3], n, step);
          });
      add("sgd_update_reference", element_count(n), {n, n}, traffic::sgd_update(n) * size,
          [n](const Device&, Tensors<T>& t) {
            cpu::reference::sgd_update<T>(t[0], t[1], n, 1e-3);
          });
    }
  }
  {  // the memory-bandwidth ceilings, on every thread the rank has, kStreamBytes per tensor (well
     // past any cache): a copy (read src, write dst) and STREAM's add (read a, b; write y)
    const int64_t n = kStreamBytes / static_cast<int64_t>(sizeof(T));
    add("copy", element_count(n), {n, n}, 2.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.copy(t[0], t[1], n * sizeof(T)); });
    add("stream_add", element_count(n), {n, n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.residual_add<T>(t[0], t[1], t[2], n); });
    if (backend.device.kind() == DeviceKind::cpu) {
      // Adam's traffic without its arithmetic (read p, g, m, v; write p, m, v): reads are cheaper
      // than writes here, so the optimizer's ceiling is this stream's rate, not the copy's.
      const int64_t third = n / 3;
      add("stream_update", element_count(third), {third, third, third, third}, 7.0 * third * size,
          [third](const Device&, Tensors<T>& t) { update_stream(t[0], t[1], t[2], t[3], third); });
    }
  }
}

template void register_elementwise_benchmarks<float>(Backend, const KernelBenchOptions&);
template void register_elementwise_benchmarks<double>(Backend, const KernelBenchOptions&);

}  // namespace mlps::kernel_bench
