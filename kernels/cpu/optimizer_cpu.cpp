// Adam and SGD updates on the CPU, in the parameter's own precision as PyTorch does: the rank's
// threads each take a contiguous chunk, in code built for the node's widest vectors. Bit for bit
// the reference loops' results (reference_optimizer_cpu.cpp).
#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu/float16_bits.h"
#include "kernels/cpu/optimizer_loops.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/half_types.h"
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

// value = master's bits in a 16-bit format: typed mixed precision's copy.
template <uint16_t (*ToBits)(float)>
MLPS_VECTOR_CLONES void bits_copy_chunk(uint16_t* value, const float* master, int64_t n) {
  for (int64_t i = 0; i < n; ++i) value[i] = ToBits(master[i]);
}

template <typename S>
void bits_copy(S* value, const float* master, int64_t n) {
  auto* bits = reinterpret_cast<uint16_t*>(value);  // a standard-layout struct of one uint16_t
  if constexpr (std::is_same_v<S, bf16>) bits_copy_chunk<float_to_bf16_bits>(bits, master, n);
  else bits_copy_chunk<float_to_fp16_bits>(bits, master, n);
}

// The rounded updates walk each thread's chunk in blocks small enough to stay in L1 between the
// update and its rounded copy: one pass over memory, as the GPU's single kernel makes.
constexpr int64_t kRoundedBlock = 2048;

// The fp32 master's update, each thread's chunk in blocks, each block's 16-bit copy written by
// copy(first, count) right after its update.
template <typename Copy>
void adam_in_blocks(float* master, float* grad, float* m, float* v, int64_t n,
                    const AdamStep& step, GradAfterUpdate after, Copy copy) {
  const detail::AdamScalars<float> s(step);
  const bool scaled = step.grad_scale != 1.0;
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kRoundedBlock) {
      const int64_t count = std::min(kRoundedBlock, end - b);
      adam_chunk(master + b, grad + b, m + b, v + b, count, s, scaled, zero);
      copy(b, count);
    }
  });
}

template <typename Copy>
void sgd_in_blocks(float* master, float* grad, int64_t n, double lr, GradAfterUpdate after,
                   Copy copy) {
  const float rate = static_cast<float>(lr);
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kRoundedBlock) {
      const int64_t count = std::min(kRoundedBlock, end - b);
      if (zero) sgd_chunk<true>(master + b, grad + b, count, rate);
      else sgd_chunk<false>(master + b, grad + b, count, rate);
      copy(b, count);
    }
  });
}

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
  adam_in_blocks(master, grad, m, v, n, step, after, [&](int64_t first, int64_t count) {
    round_copy(value + first, master + first, count, format);
  });
}

void sgd_update_rounded(float* master, float* value, float* grad, int64_t n, double lr,
                        GradAfterUpdate after, StorageFormat format) {
  check_rounded_format(format);
  sgd_in_blocks(master, grad, n, lr, after, [&](int64_t first, int64_t count) {
    round_copy(value + first, master + first, count, format);
  });
}

template <typename S>
void adam_update_16bit(float* master, S* value, float* grad, float* m, float* v, int64_t n,
                       const AdamStep& step, GradAfterUpdate after) {
  adam_in_blocks(master, grad, m, v, n, step, after, [&](int64_t first, int64_t count) {
    bits_copy(value + first, master + first, count);
  });
}

template <typename S>
void sgd_update_16bit(float* master, S* value, float* grad, int64_t n, double lr,
                      GradAfterUpdate after) {
  sgd_in_blocks(master, grad, n, lr, after, [&](int64_t first, int64_t count) {
    bits_copy(value + first, master + first, count);
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)
MLPS_INSTANTIATE_16BIT_UPDATES()

}  // namespace mlps::cpu
