// Adam and SGD updates on the GPU, in the parameter's own precision with the same operation
// order as the CPU twin (and PyTorch); for mixed precision, the same kernels also write the
// updated fp32 master rounded to the 16-bit storage format.
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_formats.cuh"
#include "kernels/half_types.h"
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
  // Mixed precision: the updated fp32 master also goes, in the same pass, to `rounded` (an fp32
  // copy holding 16-bit values, the emulation) or to `bits` (typed storage: the 16-bit values
  // themselves) in this 16-bit format (full: neither is written; every thread takes the same
  // branch).
  T* rounded;
  unsigned short* bits;
  StorageFormat format;
};

// The new value rounded to a 16-bit storage format, as an fp32 value or as its bits (full: not
// written); float only.
template <typename T>
__device__ void write_rounded(T* rounded, unsigned short* bits, int64_t i, T p,
                              StorageFormat format) {
  if constexpr (std::is_same_v<T, float>) {
    if (format == StorageFormat::full) return;
    const unsigned short b =
        format == StorageFormat::bf16 ? Bf16::to_bits(p) : Fp16::to_bits(p);
    if (bits) bits[i] = b;
    else rounded[i] = format == StorageFormat::bf16 ? Bf16::from_bits(b) : Fp16::from_bits(b);
  }
}

// The square root in T's own precision, correctly rounded, as the CPU's std::sqrt: CUDA's sqrtf
// is (without --use_fast_math), and a plain sqrt could compute a float's in double (the emulated
// GPU's does). With contraction off for this file (Makefile), the GPU's update and the CPU's
// then agree bit for bit, so an update offloaded to the host computes what the GPU would.
template <typename T>
__device__ T root(T x) {
  if constexpr (std::is_same_v<T, float>) return sqrtf(x);
  else return sqrt(x);
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
    const T p = param[i] - s.step_size * mi / (root(vi) * s.inv_sqrt_bc2 + s.eps);
    param[i] = p;
    if (s.zero_grad) grad[i] = T(0);
    write_rounded(s.rounded, s.bits, i, p, s.format);
  }
}

template <typename T>
__global__ void sgd_kernel(T* param, T* grad, int64_t n, T rate, bool zero_grad, T* rounded,
                           unsigned short* bits, StorageFormat format) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const T p = param[i] - rate * grad[i];
    param[i] = p;
    if (zero_grad) grad[i] = T(0);
    write_rounded(rounded, bits, i, p, format);
  }
}

template <typename T>
AdamScalars<T> adam_scalars(const AdamStep& step, GradAfterUpdate after, T* rounded = nullptr,
                            StorageFormat format = StorageFormat::full,
                            unsigned short* bits = nullptr) {
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
          bits,
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
      param, grad, n, static_cast<T>(lr), after == GradAfterUpdate::zeroed, nullptr, nullptr,
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
  MLPS_LAUNCH(sgd_kernel<float>, blocks, kThreads, 0, detail::stream(), master, grad, n,
              static_cast<float>(lr), after == GradAfterUpdate::zeroed, value, nullptr, format);
  MLPS_CUDA_CHECK_LAUNCH();
}

// A 16-bit type's buffer as the bits the kernels write (a standard-layout struct of one uint16_t).
template <typename S>
unsigned short* bits_of(S* value) {
  return reinterpret_cast<unsigned short*>(value);
}

template <typename S>
void adam_update_16bit(float* master, S* value, float* grad, float* m, float* v, int64_t n,
                       const AdamStep& step, GradAfterUpdate after) {
  if (n == 0) return;
  const AdamScalars<float> s =
      adam_scalars<float>(step, after, nullptr, format_of<S>(), bits_of(value));
  MLPS_LAUNCH(adam_kernel<float>, detail::grid_blocks(n, kThreads), kThreads, 0,
              detail::stream(), master, grad, m, v, n, s);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename S>
void sgd_update_16bit(float* master, S* value, float* grad, int64_t n, double lr,
                      GradAfterUpdate after) {
  if (n == 0) return;
  MLPS_LAUNCH(sgd_kernel<float>, detail::grid_blocks(n, kThreads), kThreads, 0,
              detail::stream(), master, grad, n, static_cast<float>(lr),
              after == GradAfterUpdate::zeroed, nullptr, bits_of(value), format_of<S>());
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)
MLPS_INSTANTIATE_16BIT_UPDATES()

}  // namespace mlps::cuda
