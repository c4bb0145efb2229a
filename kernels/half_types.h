#pragma once
// The 16-bit storage types of mixed precision: a bf16 or fp16 value as its two bytes, layout-
// compatible with CUDA's __nv_bfloat16 and __half (a buffer of them goes to cuBLAS and NCCL as it
// is), converted on the host with round to nearest even (kernels/cpu/float16_bits.h, the same
// rounding as round_to_storage). Arithmetic happens in float: these only store.
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/float16_bits.h"
#include "kernels/kernels.h"

namespace mlps {

struct bf16 {
  uint16_t bits = 0;
};
struct fp16 {
  uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2 && std::is_standard_layout_v<bf16> &&
              std::is_trivially_copyable_v<bf16>);
static_assert(sizeof(fp16) == 2 && std::is_standard_layout_v<fp16> &&
              std::is_trivially_copyable_v<fp16>);

inline float to_float(bf16 x) { return cpu::bf16_bits_to_float(x.bits); }
inline float to_float(fp16 x) { return cpu::fp16_bits_to_float(x.bits); }

// The nearest value of S (ties to even; fp16 overflow is ±inf, NaN stays NaN).
template <typename S>
S from_float(float value);
template <>
inline bf16 from_float<bf16>(float value) {
  return {cpu::float_to_bf16_bits(value)};
}
template <>
inline fp16 from_float<fp16>(float value) {
  return {cpu::float_to_fp16_bits(value)};
}

// The StorageFormat a 16-bit type stores (the emulation's name for the same rounding).
template <typename S>
constexpr StorageFormat format_of() {
  static_assert(std::is_same_v<S, bf16> || std::is_same_v<S, fp16>, "a 16-bit storage type");
  return std::is_same_v<S, bf16> ? StorageFormat::bf16 : StorageFormat::fp16;
}

}  // namespace mlps
