// Adam and SGD updates on the CPU, in the parameter's own precision as PyTorch does.
#include <cmath>

#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

namespace {

// kScaled is a template flag, not a runtime test, so both loops vectorise and an unscaled step
// performs exactly the operations it always did.
template <bool kScaled, typename T>
void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict mm, T* __restrict vv,
               int64_t n, const AdamStep& step) {
  // PyTorch's order: p −= (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps).
  const T beta1 = static_cast<T>(step.beta1);
  const T beta2 = static_cast<T>(step.beta2);
  const T one_minus_beta1 = static_cast<T>(1.0 - step.beta1);
  const T one_minus_beta2 = static_cast<T>(1.0 - step.beta2);
  const T step_size = static_cast<T>(step.lr / step.bias_correction1);
  const T inv_sqrt_bc2 = static_cast<T>(1.0 / std::sqrt(step.bias_correction2));
  const T eps = static_cast<T>(step.eps);
  const T grad_scale = static_cast<T>(step.grad_scale);
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i];
    if constexpr (kScaled) gi *= grad_scale;
    const T mi = beta1 * mm[i] + one_minus_beta1 * gi;
    const T vi = beta2 * vv[i] + one_minus_beta2 * gi * gi;
    mm[i] = mi;
    vv[i] = vi;
    p[i] -= step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace

template <typename T>
void adam_update(T* param, const T* grad, T* m, T* v, int64_t n, const AdamStep& step) {
  // The four tensors never overlap; __restrict says so, so the loop vectorises without checks.
  if (step.grad_scale == 1.0) adam_loop<false>(param, grad, m, v, n, step);
  else adam_loop<true>(param, grad, m, v, n, step);
}

template <typename T>
void sgd_update(T* param, const T* grad, int64_t n, double lr) {
  const T rate = static_cast<T>(lr);
  for (int64_t i = 0; i < n; ++i) param[i] -= rate * grad[i];
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cpu
