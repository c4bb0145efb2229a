// GEMM on the CPU through OpenBLAS (row-major cblas).
#include <cblas.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/blas_dims.h"
#include "kernels/cpu/float16_bits.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/half_types.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {
namespace {

void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
               const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
               const double* a, int lda, const double* b, int ldb, double beta, double* c,
               int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// C = 0 on the rank's threads. With beta = 0 OpenBLAS zeroes C in a pass of its own before it
// adds A·B (its gemm_beta: 7% of the serial step at the tutorial size, the weight gradients
// being the largest C). A parallel memset writes the same zeros at the full write bandwidth,
// and beta = 1 on them adds the same products: bit for bit the same C.
template <typename T>
void zero_matrix(T* c, int64_t m, int64_t n, int64_t ldc) {
  if (ldc == n) return fill_zero(c, sizeof(T) * static_cast<size_t>(m * n));
  detail::parallel_rows(m, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memset(c + r * ldc, 0, sizeof(T) * static_cast<size_t>(n));
  });
}

// A row-major operand of `rows` × `cols` (row stride ld) with its elements rounded to TF32, as
// the tensor cores read an fp32 input under CUBLAS_COMPUTE_32F_FAST_TF32.
std::vector<float> tf32_copy(const float* x, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> copy(rows > 0 ? static_cast<size_t>((rows - 1) * ld + cols) : 0);
  for (size_t i = 0; i < copy.size(); ++i) copy[i] = round_to_tf32(x[i]);
  return copy;
}

// Below this C is cheap to zero either way, and OpenBLAS's own pass saves a call.
constexpr int64_t kZeroItselfFrom = int64_t{1} << 16;

// A 16-bit value's bits: the types are standard-layout structs of one uint16_t.
template <typename S>
const uint16_t* bits_of(const S* x) { return reinterpret_cast<const uint16_t*>(x); }

// x [rows × cols] (row stride ld) widened into the compact dst [rows × cols], exactly.
template <typename S>
void widen_matrix(float* dst, const S* x, int64_t rows, int64_t cols, int64_t ld) {
  if (ld == cols) return unpack_16bit(dst, bits_of(x), rows * cols, format_of<S>());
  for (int64_t r = 0; r < rows; ++r)
    unpack_16bit(dst + r * cols, bits_of(x) + r * ld, cols, format_of<S>());
}

// The compact src [rows × cols] rounded into x (row stride ld).
template <typename S>
void narrow_matrix(S* x, int64_t ld, const float* src, int64_t rows, int64_t cols) {
  auto* bits = reinterpret_cast<uint16_t*>(x);
  if (ld == cols) return pack_16bit(bits, src, rows * cols, format_of<S>());
  for (int64_t r = 0; r < rows; ++r)
    pack_16bit(bits + r * ld, src + r * cols, cols, format_of<S>());
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, GemmCompute compute) {
  if (m == 0 || n == 0) return;
  const auto d = mlps::detail::gemm_dims(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  std::vector<float> a_tf32, b_tf32;
  (void)compute;  // double GEMMs are exact
  if constexpr (std::is_same_v<T, float>) {
    if (compute == GemmCompute::tf32 && k > 0) {
      a_tf32 = tf32_copy(a, trans_a ? k : m, trans_a ? m : k, lda);
      b_tf32 = tf32_copy(b, trans_b ? n : k, trans_b ? k : n, ldb);
      a = a_tf32.data();
      b = b_tf32.data();
    }
  }
  if (beta == T(0) && m * n >= kZeroItselfFrom) {
    zero_matrix(c, m, n, ldc);
    beta = T(1);
  }
  call_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, d.m, d.n,
            d.k, alpha, a, d.lda, b, d.ldb, beta, c, d.ldc);
}

int64_t gemm_16bit_scratch(int64_t m, int64_t n, int64_t k, bool c_is_16bit) {
  return m * k + k * n + (c_is_16bit ? m * n : 0);
}

template <typename S, typename C>
void gemm_16bit(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const S* a, int64_t lda, const S* b, int64_t ldb, float beta, C* c, int64_t ldc,
                float* scratch) {
  if (m == 0 || n == 0) return;
  mlps::detail::gemm_dims(trans_a, trans_b, m, n, k, lda, ldb, ldc);  // the shapes' checks
  // The operands as stored (op(A) is m × k), widened into compact copies.
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  float* a32 = scratch;
  float* b32 = a32 + m * k;
  widen_matrix(a32, a, a_rows, a_cols, lda);
  widen_matrix(b32, b, b_rows, b_cols, ldb);
  if constexpr (std::is_same_v<C, float>) {
    gemm<float>(trans_a, trans_b, m, n, k, alpha, a32, a_cols, b32, b_cols, beta, c, ldc);
  } else {
    float* c32 = b32 + k * n;
    if (beta != 0.0f) widen_matrix(c32, c, m, n, ldc);
    gemm<float>(trans_a, trans_b, m, n, k, alpha, a32, a_cols, b32, b_cols, beta, c32, n);
    narrow_matrix(c, ldc, c32, m, n);
  }
}

const char* gemm_16bit_call(StorageFormat format) {
  return format == StorageFormat::fp16 ? "cblas_sgemm of fp16 widened to fp32"
                                       : "cblas_sgemm of bf16 widened to fp32";
}

const char* gemm_call(GemmCompute compute, bool fp64) {
  if (fp64) return "cblas_dgemm";
  return compute == GemmCompute::tf32 ? "cblas_sgemm of TF32-rounded copies" : "cblas_sgemm";
}

MLPS_INSTANTIATE_KERNELS(MLPS_GEMM_INSTANCES)
MLPS_INSTANTIATE_16BIT_GEMM()

}  // namespace mlps::cpu
