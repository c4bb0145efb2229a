#pragma once
// Scalar float ↔ bf16/fp16 conversions on bit patterns, round to nearest even, for the CPU
// twins and for MPI's 16-bit sum (src/comm). Written out at bit level because the build targets
// plain x86-64 (no -march, so no F16C) and g++ 12 has no _Float16 in C++. NaN stays a (quiet)
// NaN of the same sign; fp16 overflow gives ±inf; fp16 subnormals are rounded exactly.
#include <bit>
#include <cstdint>

namespace mlps::cpu {

inline uint16_t float_to_bf16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  // The plain rounding below could carry a NaN's payload into the exponent (→ inf).
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept lowest bit rounds the dropped 16 bits to nearest even; a carry
  // moves into the exponent, which is how values round up to the next binade or to inf.
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t float_to_fp16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // ≥ 65520: inf
  if (magnitude >= 0x38800000u) {  // ≥ 2^-14: normal in fp16
    // Re-bias the exponent (127 → 15), then round the 13 dropped bits to nearest even.
    const uint32_t rebased = magnitude - 0x38000000u;
    return static_cast<uint16_t>(sign | ((rebased + 0x0fffu + ((rebased >> 13) & 1u)) >> 13));
  }
  if (magnitude <= 0x33000000u) return sign;  // ≤ 2^-25: to ±0 (2^-25 itself ties to even 0)
  // Subnormal in fp16: the value in units of 2^-24 is the 24-bit significand shifted right by
  // (126 − biased exponent), 14..24 bits here; round what is shifted out to nearest even.
  // A result of 0x400 is the smallest normal, which is also its correct encoding.
  const uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const uint32_t shift = 126u - (magnitude >> 23);
  uint32_t units = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (units & 1u))) ++units;
  return static_cast<uint16_t>(sign | units);
}

inline float fp16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x03ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// TF32 (the tensor cores' fp32 input format: fp32's exponent, 10 mantissa bits) as a float: the
// 13 low mantissa bits rounded away to nearest even; inf and NaN unchanged.
inline float round_to_tf32(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7f800000u) == 0x7f800000u) return value;
  return std::bit_cast<float>((bits + 0x0fffu + ((bits >> 13) & 1u)) & ~0x1fffu);
}

}  // namespace mlps::cpu
