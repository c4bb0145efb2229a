#pragma once
// The emulated-GPU build: CUDA's bfloat16 conversions, which HIP-CPU does not have. bf16 is the
// upper half of an IEEE float; __float2bfloat16_rn rounds the lower half away to nearest, ties
// to even, as the GPU does (NaN stays a quiet NaN with its sign).
#include <bit>
#include <cstdint>

struct __nv_bfloat16 {
  uint16_t bits;
};

inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x0040u)};
  const uint32_t halfway_and_parity = 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>((u + halfway_and_parity) >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16);
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return {bits}; }
