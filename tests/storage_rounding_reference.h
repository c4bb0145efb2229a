#pragma once
// Reference bf16/fp16 rounding for the tests, from the formats' definitions in double arithmetic
// (independent of the bit-level kernels): the nearest multiple of the quantum at the value's
// exponent, ties to even, and ±inf where the unbounded rounding exceeds the largest finite value.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace mlps::ref {

struct FloatFormat {
  int precision;     // significand bits, the implicit one included
  int min_exponent;  // exponent of the smallest normal value (subnormals share its quantum)
  double max_finite;
};

inline FloatFormat float_format(StorageFormat format) {
  if (format == StorageFormat::bf16) return {8, -126, std::ldexp(2.0 - 0x1p-7, 127)};
  return {11, -14, 65504.0};  // fp16
}

// x (any double whose rounding is wanted, e.g. an exact sum) rounded to the format, as a float.
inline float round_to(double x, StorageFormat format) {
  if (format == StorageFormat::full) return static_cast<float>(x);
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return static_cast<float>(x);
  const FloatFormat f = float_format(format);
  const double magnitude = std::fabs(x);
  const int exponent = std::max(std::ilogb(magnitude), f.min_exponent);
  const double quantum = std::ldexp(1.0, exponent - (f.precision - 1));
  double rounded = std::nearbyint(magnitude / quantum) * quantum;  // ties to even
  if (rounded > f.max_finite) rounded = INFINITY;
  return static_cast<float>(std::copysign(rounded, x));
}

}  // namespace mlps::ref
