#include "bench/support/elementwise_benchmarks.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/model_config.h"

namespace mlps::kernel_bench {

// Element-wise kernels at the sizes the model runs them; each GB/s counter counts every input
// read once and every output written once (the comment at each kernel lists them).
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
    // read y, bias; write y
    add("bias_add", rows_cols(r, c), {r * c, c}, (2.0 * r * c + c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_add<T>(t[0], t[1], r, c); });
    // read dy; write dbias
    add("bias_grad", rows_cols(r, c), {c, r * c}, (1.0 * r * c + c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_grad<T>(t[0], t[1], r, c, false); });
  }
  {  // the ReLU between fc1 and fc2
    const int64_t n = rows * ffn;
    // read x; write y
    add("relu_forward", element_count(n), {n, n}, 2.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_forward<T>(t[0], t[1], n); });
    // read dy, y; write dx
    add("relu_backward", element_count(n), {n, n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_backward<T>(t[0], t[1], t[2], n); });
  }
  {  // the block's residual, on hidden-wide activations: read a, b; write y
    const int64_t n = rows * hidden;
    add("residual_add", element_count(n), {n, n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.residual_add<T>(t[0], t[1], t[2], n); });
  }
  {  // LayerNorm(hidden)
    const int64_t r = rows, c = hidden;
    // read x, gamma, beta; write y, mean, rstd
    add("layernorm_forward", rows_cols(r, c), {r * c, r, r, r * c, c, c},
        (2.0 * r * c + 2.0 * c + 2.0 * r) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_forward<T>(t[0], t[1], t[2], t[3], t[4], t[5], r, c, 1e-5);
        });
    // read dy, x, mean, rstd, gamma; write dx, dgamma, dbeta
    add("layernorm_backward", rows_cols(r, c), {r * c, c, c, r * c, r * c, r, {r, true}, c},
        (3.0 * r * c + 2.0 * r + 3.0 * c) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_backward<T>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], r, c, false);
        });
  }
  {  // the classifier's loss
    const int64_t r = rows, c = classes;
    // read logits, labels (int32); write probs, row_loss
    add("softmax_xent_forward", rows_cols(r, c), {r * c, r, r * c},
        (2.0 * r * c + r) * size + 4.0 * r,
        [r, c](const Device& d, Tensors<T>& t) {
          d.softmax_xent_forward<T>(t[0], t[1], t[2], t.labels.data(), r, c);
        },
        true);
    // read probs, labels (int32); write dlogits
    add("softmax_xent_backward", rows_cols(r, c), {r * c, {r * c, true}},
        2.0 * r * c * size + 4.0 * r,
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
    // read p, g, m, v; write p, m, v
    add("adam_update", element_count(n), {n, n, n, {n, true}}, 7.0 * n * size,
        [n, step](const Device& d, Tensors<T>& t) {
          d.adam_update<T>(t[0], t[1], t[2], t[3], n, step);
        });
    // read p, g; write p
    add("sgd_update", element_count(n), {n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.sgd_update<T>(t[0], t[1], n, 1e-3); });
  }
  {  // the memory-bandwidth ceiling: 256 MiB, well past any cache; read src, write dst
    const int64_t n = (int64_t{256} << 20) / static_cast<int64_t>(sizeof(T));
    add("copy", element_count(n), {n, n}, 2.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.copy(t[0], t[1], n * sizeof(T)); });
  }
}

template void register_elementwise_benchmarks<float>(Backend, const KernelBenchOptions&);
template void register_elementwise_benchmarks<double>(Backend, const KernelBenchOptions&);

}  // namespace mlps::kernel_bench
