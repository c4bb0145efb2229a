#pragma once
// The argument checks of the mixed-precision storage kernels, shared by the CPU and CUDA twins
// so that a bad call throws the same std::invalid_argument on either backend.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"

namespace mlps::detail {

inline void check_count(int64_t n, const char* what) {
  if (n < 0) throw std::invalid_argument(std::string(what) + ": negative count");
}

// pack_16bit and unpack_16bit: a 16-bit format, then the count.
inline void check_16bit_wire(StorageFormat format, int64_t n, const char* what) {
  if (format != StorageFormat::bf16 && format != StorageFormat::fp16)
    throw std::invalid_argument(std::string(what) + ": the format must be bf16 or fp16");
  check_count(n, what);
}

inline void check_rounding_shape(int64_t rows, int64_t cols, int64_t ld) {
  if (rows < 0 || cols < 0 || ld < cols)
    throw std::invalid_argument("round_to_storage: need rows, cols >= 0 and ld >= cols");
}

}  // namespace mlps::detail
