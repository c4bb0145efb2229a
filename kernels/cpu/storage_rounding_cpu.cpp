// Mixed-precision storage on the CPU: rounding float values to bf16/fp16 in place, packing them
// into 16-bit words for the wire and back (split across the rank's threads, compiled for the
// node's widest vectors), and counting non-finite values.
#include <bit>
#include <cstdint>
#include <stdexcept>

#include "kernels/cpu/float16_bits.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/storage_checks.h"

namespace mlps::cpu {
namespace {

// One function per format so each loop is branch-free inside.
template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
MLPS_VECTOR_CLONES void round_chunk(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) row[c] = FromBits(ToBits(row[c]));
  }
}

template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
void round_rows(float* x, int64_t rows, int64_t cols, int64_t ld) {
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    round_chunk<ToBits, FromBits>(x + r0 * ld, r1 - r0, cols, ld);
  });
}

template <uint16_t (*ToBits)(float)>
MLPS_VECTOR_CLONES void pack_chunk(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ToBits(src[i]);
}

template <float (*FromBits)(uint16_t)>
MLPS_VECTOR_CLONES void unpack_chunk(float* dst, const uint16_t* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FromBits(src[i]);
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
  const bool bf16 = format == StorageFormat::bf16;
  detail::parallel_elements(n, [&](int64_t i0, int64_t i1) {
    if (bf16) pack_chunk<float_to_bf16_bits>(dst + i0, src + i0, i1 - i0);
    else pack_chunk<float_to_fp16_bits>(dst + i0, src + i0, i1 - i0);
  });
}

void unpack_16bit(float* dst, const uint16_t* src, int64_t n, StorageFormat format) {
  mlps::detail::check_16bit_wire(format, n, "unpack_16bit");
  const bool bf16 = format == StorageFormat::bf16;
  detail::parallel_elements(n, [&](int64_t i0, int64_t i1) {
    if (bf16) unpack_chunk<bf16_bits_to_float>(dst + i0, src + i0, i1 - i0);
    else unpack_chunk<fp16_bits_to_float>(dst + i0, src + i0, i1 - i0);
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_NONFINITE_COUNT_INSTANCES)

}  // namespace mlps::cpu
