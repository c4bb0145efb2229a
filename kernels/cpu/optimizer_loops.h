#pragma once
// The Adam and SGD loops over one contiguous run of parameters, shared by the threaded,
// multi-versioned kernels (optimizer_cpu.cpp) and the single-thread reference they are checked
// and benchmarked against (reference_optimizer_cpu.cpp).
#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"

namespace mlps::cpu::detail {

// One step's scalars in the parameter's precision, computed once per tensor.
template <typename T>
struct AdamScalars {
  explicit AdamScalars(const AdamStep& step)
      : beta1(static_cast<T>(step.beta1)),
        beta2(static_cast<T>(step.beta2)),
        one_minus_beta1(static_cast<T>(1.0 - step.beta1)),
        one_minus_beta2(static_cast<T>(1.0 - step.beta2)),
        step_size(static_cast<T>(step.lr / step.bias_correction1)),
        inv_sqrt_bc2(static_cast<T>(1.0 / std::sqrt(step.bias_correction2))),
        eps(static_cast<T>(step.eps)),
        grad_scale(static_cast<T>(step.grad_scale)) {}
  T beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, inv_sqrt_bc2, eps, grad_scale;
};

// kScaled and kZeroGrad are template flags, not runtime tests, so every loop vectorises and an
// unscaled step performs exactly the operations it always did. kZeroGrad also writes g = 0 (G is
// then T, else const T). The four tensors never overlap (__restrict).
template <bool kScaled, bool kZeroGrad, typename T, typename G>
inline void adam_loop(T* __restrict p, G* __restrict g, T* __restrict mm, T* __restrict vv,
                      int64_t n, const AdamScalars<T>& s) {
  // PyTorch's order: p −= (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps).
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i];
    if constexpr (kScaled) gi *= s.grad_scale;
    const T mi = s.beta1 * mm[i] + s.one_minus_beta1 * gi;
    const T vi = s.beta2 * vv[i] + s.one_minus_beta2 * gi * gi;
    mm[i] = mi;
    vv[i] = vi;
    p[i] -= s.step_size * mi / (std::sqrt(vi) * s.inv_sqrt_bc2 + s.eps);
    if constexpr (kZeroGrad) g[i] = T(0);
  }
}

template <bool kZeroGrad, typename T, typename G>
inline void sgd_loop(T* __restrict p, G* __restrict g, int64_t n, T rate) {
  for (int64_t i = 0; i < n; ++i) {
    p[i] -= rate * g[i];
    if constexpr (kZeroGrad) g[i] = T(0);
  }
}

}  // namespace mlps::cpu::detail
