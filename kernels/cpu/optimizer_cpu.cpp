// Adam and SGD updates on the CPU, in the parameter's own precision as PyTorch does: the rank's
// threads each take a contiguous chunk, in code built for the node's widest vectors. Bit for bit
// the reference loops' results (reference_optimizer_cpu.cpp).
#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/float16_bits.h"
#include "kernels/cpu/optimizer_loops.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

namespace {

template <bool kScaled, bool kZeroGrad, typename T>
MLPS_VECTOR_CLONES void adam_chunk(T* p, T* g, T* m, T* v, int64_t n,
                                   const detail::AdamScalars<T>& s) {
  detail::adam_loop<kScaled, kZeroGrad>(p, g, m, v, n, s);
}

// The flags as template arguments, so that each of the four loops vectorises on its own.
template <typename T>
void adam_chunk(T* p, T* g, T* m, T* v, int64_t n, const detail::AdamScalars<T>& s, bool scaled,
                bool zero) {
  if (scaled) {
    if (zero) adam_chunk<true, true>(p, g, m, v, n, s);
    else adam_chunk<true, false>(p, g, m, v, n, s);
  } else {
    if (zero) adam_chunk<false, true>(p, g, m, v, n, s);
    else adam_chunk<false, false>(p, g, m, v, n, s);
  }
}

template <bool kZeroGrad, typename T>
MLPS_VECTOR_CLONES void sgd_chunk(T* p, T* g, int64_t n, T rate) {
  detail::sgd_loop<kZeroGrad>(p, g, n, rate);
}

// value = master rounded to a 16-bit format (one function per format: a branch-free loop).
template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
MLPS_VECTOR_CLONES void round_copy_chunk(float* value, const float* master, int64_t n) {
  for (int64_t i = 0; i < n; ++i) value[i] = FromBits(ToBits(master[i]));
}

void round_copy(float* value, const float* master, int64_t n, StorageFormat format) {
  if (format == StorageFormat::bf16)
    round_copy_chunk<float_to_bf16_bits, bf16_bits_to_float>(value, master, n);
  else
    round_copy_chunk<float_to_fp16_bits, fp16_bits_to_float>(value, master, n);
}

// The rounded updates walk each thread's chunk in blocks small enough to stay in L1 between the
// update and its rounded copy: one pass over memory, as the GPU's single kernel makes.
constexpr int64_t kRoundedBlock = 2048;

void check_rounded_format(StorageFormat format) {
  if (format == StorageFormat::full)
    throw std::invalid_argument("the rounded update needs a 16-bit format (bf16 or fp16)");
}

}  // namespace

template <typename T>
void adam_update(T* param, T* grad, T* m, T* v, int64_t n, const AdamStep& step,
                 GradAfterUpdate after) {
  const detail::AdamScalars<T> s(step);
  const bool scaled = step.grad_scale != 1.0;
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    adam_chunk(param + begin, grad + begin, m + begin, v + begin, end - begin, s, scaled, zero);
  });
}

template <typename T>
void sgd_update(T* param, T* grad, int64_t n, double lr, GradAfterUpdate after) {
  const T rate = static_cast<T>(lr);
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    if (zero) sgd_chunk<true>(param + begin, grad + begin, end - begin, rate);
    else sgd_chunk<false>(param + begin, grad + begin, end - begin, rate);
  });
}

void adam_update_rounded(float* master, float* value, float* grad, float* m, float* v, int64_t n,
                         const AdamStep& step, GradAfterUpdate after, StorageFormat format) {
  check_rounded_format(format);
  const detail::AdamScalars<float> s(step);
  const bool scaled = step.grad_scale != 1.0;
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kRoundedBlock) {
      const int64_t count = std::min(kRoundedBlock, end - b);
      adam_chunk(master + b, grad + b, m + b, v + b, count, s, scaled, zero);
      round_copy(value + b, master + b, count, format);
    }
  });
}

void sgd_update_rounded(float* master, float* value, float* grad, int64_t n, double lr,
                        GradAfterUpdate after, StorageFormat format) {
  check_rounded_format(format);
  const float rate = static_cast<float>(lr);
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kRoundedBlock) {
      const int64_t count = std::min(kRoundedBlock, end - b);
      if (zero) sgd_chunk<true>(master + b, grad + b, count, rate);
      else sgd_chunk<false>(master + b, grad + b, count, rate);
      round_copy(value + b, master + b, count, format);
    }
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cpu
