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

// The sizes of one row-major gemm (as kernel_api.inc states it) ready for BLAS: leading
// dimensions made legal when k == 0, then each narrowed, checked in argument order.
struct GemmDims {
  int m, n, k, lda, ldb, ldc;
};

inline GemmDims gemm_dims(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc) {
  if (k == 0) {
    lda = legal_ld(lda, trans_a ? m : k);
    ldb = legal_ld(ldb, trans_b ? k : n);
  }
  return {blas_int(m, "m"),     blas_int(n, "n"),     blas_int(k, "k"),
          blas_int(lda, "lda"), blas_int(ldb, "ldb"), blas_int(ldc, "ldc")};
}

}  // namespace mlps::detail
