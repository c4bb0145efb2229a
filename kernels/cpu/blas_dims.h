#pragma once
// Narrowing of 64-bit sizes to the 32-bit ints that cblas and cuBLAS take; shared by both
// GEMM twins so that they reject the same shapes with the same message.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mlps::detail {

inline int blas_int(int64_t value, const char* name) {
  if (value < 0 || value > INT_MAX)
    throw std::invalid_argument(std::string("gemm: ") + name + " = " + std::to_string(value) +
                                " is outside the 32-bit BLAS range");
  return static_cast<int>(value);
}

// With k == 0 neither A nor B is read, but BLAS still checks their leading dimensions; raise
// them to the smallest legal value so that C = beta·C works for any caller.
inline int64_t legal_ld(int64_t ld, int64_t cols) { return ld < cols ? cols : (ld < 1 ? 1 : ld); }

}  // namespace mlps::detail
