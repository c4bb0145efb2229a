// Mixed-precision storage on the CPU: rounding float values to bf16/fp16 in place, packing them
// into 16-bit words for the wire and back, and counting non-finite values.
#include <bit>
#include <cstdint>
#include <stdexcept>

#include "kernels/cpu/float16_bits.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/storage_checks.h"

namespace mlps::cpu {
namespace {

// One function per format so each loop is branch-free inside.
template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
void round_rows(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) row[c] = FromBits(ToBits(row[c]));
  }
}

// Exponent all ones ⇔ inf or NaN; on the bits, so it holds under -ffast-math too.
inline bool nonfinite(float v) {
  return (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u;
}
inline bool nonfinite(double v) {
  return (std::bit_cast<uint64_t>(v) & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
}

}  // namespace

void round_to_storage(float* x, int64_t rows, int64_t cols, int64_t ld, StorageFormat format) {
  mlps::detail::check_rounding_shape(rows, cols, ld);
  switch (format) {
    case StorageFormat::full:
      return;
    case StorageFormat::bf16:
      return round_rows<float_to_bf16_bits, bf16_bits_to_float>(x, rows, cols, ld);
    case StorageFormat::fp16:
      return round_rows<float_to_fp16_bits, fp16_bits_to_float>(x, rows, cols, ld);
  }
  throw std::invalid_argument("round_to_storage: unknown storage format");
}

template <typename T>
int64_t count_nonfinite(const T* x, int64_t n) {
  mlps::detail::check_count(n, "count_nonfinite");
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += nonfinite(x[i]) ? 1 : 0;
  return count;
}

template <typename T>
void add_nonfinite_count(uint64_t* total, const T* x, int64_t n) {
  *total += static_cast<uint64_t>(count_nonfinite(x, n));
}

void pack_16bit(uint16_t* dst, const float* src, int64_t n, StorageFormat format) {
  mlps::detail::check_16bit_wire(format, n, "pack_16bit");
  if (format == StorageFormat::bf16)
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_fp16_bits(src[i]);
}

void unpack_16bit(float* dst, const uint16_t* src, int64_t n, StorageFormat format) {
  mlps::detail::check_16bit_wire(format, n, "unpack_16bit");
  if (format == StorageFormat::bf16)
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_bits_to_float(src[i]);
}

MLPS_INSTANTIATE_KERNELS(MLPS_NONFINITE_COUNT_INSTANCES)

}  // namespace mlps::cpu
