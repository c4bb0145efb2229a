// Adam and SGD updates on the GPU, in the parameter's own precision with the same operation
// order as the CPU twin (and PyTorch); for mixed precision, the same kernels also write the
// updated fp32 master rounded to the 16-bit storage format.
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_formats.cuh"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cuda {
namespace {

constexpr int kThreads = 256;
using detail::Bf16;
using detail::Fp16;

template <typename T>
struct AdamScalars {
  T beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, inv_sqrt_bc2, eps, grad_scale;
  bool scaled;  // grad_scale != 1: an unscaled step does exactly the operations it always did
  bool zero_grad;  // GradAfterUpdate::zeroed
  // Mixed precision: the updated fp32 master also goes to `rounded` in this 16-bit format, in the
  // same pass (full: not written; every thread takes the same branch).
  T* rounded;
  StorageFormat format;
};

// The new value rounded to a 16-bit storage format (full: not written); float only.
template <typename T>
__device__ void write_rounded(T* rounded, int64_t i, T p, StorageFormat format) {
  if constexpr (std::is_same_v<T, float>) {
    if (format == StorageFormat::bf16) rounded[i] = Bf16::from_bits(Bf16::to_bits(p));
    else if (format == StorageFormat::fp16) rounded[i] = Fp16::from_bits(Fp16::to_bits(p));
  }
}

template <typename T>
__global__ void adam_kernel(T* param, T* grad, T* m, T* v, int64_t n, AdamScalars<T> s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const T g = s.scaled ? grad[i] * s.grad_scale : grad[i];
    const T mi = s.beta1 * m[i] + s.one_minus_beta1 * g;
    const T vi = s.beta2 * v[i] + s.one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const T p = param[i] - s.step_size * mi / (sqrt(vi) * s.inv_sqrt_bc2 + s.eps);
    param[i] = p;
    if (s.zero_grad) grad[i] = T(0);
    write_rounded(s.rounded, i, p, s.format);
  }
}

template <typename T>
__global__ void sgd_kernel(T* param, T* grad, int64_t n, T rate, bool zero_grad, T* rounded,
                           StorageFormat format) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const T p = param[i] - rate * grad[i];
    param[i] = p;
    if (zero_grad) grad[i] = T(0);
    write_rounded(rounded, i, p, format);
  }
}

template <typename T>
AdamScalars<T> adam_scalars(const AdamStep& step, GradAfterUpdate after, T* rounded = nullptr,
                            StorageFormat format = StorageFormat::full) {
  return {static_cast<T>(step.beta1),
          static_cast<T>(step.beta2),
          static_cast<T>(1.0 - step.beta1),
          static_cast<T>(1.0 - step.beta2),
          static_cast<T>(step.lr / step.bias_correction1),
          static_cast<T>(1.0 / std::sqrt(step.bias_correction2)),
          static_cast<T>(step.eps),
          static_cast<T>(step.grad_scale),
          step.grad_scale != 1.0,
          after == GradAfterUpdate::zeroed,
          rounded,
          format};
}

void check_rounded_format(StorageFormat format) {
  if (format == StorageFormat::full)
    throw std::invalid_argument("the rounded update needs a 16-bit format (bf16 or fp16)");
}

}  // namespace

template <typename T>
void adam_update(T* param, T* grad, T* m, T* v, int64_t n, const AdamStep& step,
                 GradAfterUpdate after) {
  if (n == 0) return;
  MLPS_LAUNCH(adam_kernel<T>, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      param, grad, m, v, n, adam_scalars<T>(step, after));
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void sgd_update(T* param, T* grad, int64_t n, double lr, GradAfterUpdate after) {
  if (n == 0) return;
  MLPS_LAUNCH(sgd_kernel<T>, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      param, grad, n, static_cast<T>(lr), after == GradAfterUpdate::zeroed, nullptr,
      StorageFormat::full);
  MLPS_CUDA_CHECK_LAUNCH();
}

void adam_update_rounded(float* master, float* value, float* grad, float* m, float* v, int64_t n,
                         const AdamStep& step, GradAfterUpdate after, StorageFormat format) {
  check_rounded_format(format);
  if (n == 0) return;
  const AdamScalars<float> s = adam_scalars<float>(step, after, value, format);
  const auto blocks = detail::grid_blocks(n, kThreads);
  MLPS_LAUNCH(adam_kernel<float>, blocks, kThreads, 0, detail::stream(), master, grad, m, v, n,
              s);
  MLPS_CUDA_CHECK_LAUNCH();
}

void sgd_update_rounded(float* master, float* value, float* grad, int64_t n, double lr,
                        GradAfterUpdate after, StorageFormat format) {
  check_rounded_format(format);
  if (n == 0) return;
  const auto blocks = detail::grid_blocks(n, kThreads);
  const bool zero = after == GradAfterUpdate::zeroed;
  MLPS_LAUNCH(sgd_kernel<float>, blocks, kThreads, 0, detail::stream(), master, grad, n,
              static_cast<float>(lr), zero, value, format);
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cuda
