// Adam and SGD updates on the GPU, in the parameter's own precision with the same operation
// order as the CPU twin (and PyTorch).
#include <cmath>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
struct AdamScalars {
  T beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, inv_sqrt_bc2, eps, grad_scale;
  bool scaled;  // grad_scale != 1: an unscaled step does exactly the operations it always did
  bool zero_grad;  // GradAfterUpdate::zeroed
};

template <typename T>
__global__ void adam_kernel(T* param, T* grad, T* m, T* v, int64_t n, AdamScalars<T> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const T g = s.scaled ? grad[i] * s.grad_scale : grad[i];
    const T mi = s.beta1 * m[i] + s.one_minus_beta1 * g;
    const T vi = s.beta2 * v[i] + s.one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] -= s.step_size * mi / (sqrt(vi) * s.inv_sqrt_bc2 + s.eps);
    if (s.zero_grad) grad[i] = T(0);
  }
}

template <typename T>
__global__ void sgd_kernel(T* param, T* grad, int64_t n, T rate, bool zero_grad) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    param[i] -= rate * grad[i];
    if (zero_grad) grad[i] = T(0);
  }
}

}  // namespace

template <typename T>
void adam_update(T* param, T* grad, T* m, T* v, int64_t n, const AdamStep& step,
                 GradAfterUpdate after) {
  if (n == 0) return;
  const AdamScalars<T> s{static_cast<T>(step.beta1),
                         static_cast<T>(step.beta2),
                         static_cast<T>(1.0 - step.beta1),
                         static_cast<T>(1.0 - step.beta2),
                         static_cast<T>(step.lr / step.bias_correction1),
                         static_cast<T>(1.0 / std::sqrt(step.bias_correction2)),
                         static_cast<T>(step.eps),
                         static_cast<T>(step.grad_scale),
                         step.grad_scale != 1.0,
                         after == GradAfterUpdate::zeroed};
  MLPS_LAUNCH(adam_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      param, grad, m, v, n, s);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void sgd_update(T* param, T* grad, int64_t n, double lr, GradAfterUpdate after) {
  if (n == 0) return;
  MLPS_LAUNCH(sgd_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      param, grad, n, static_cast<T>(lr), after == GradAfterUpdate::zeroed);
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cuda
