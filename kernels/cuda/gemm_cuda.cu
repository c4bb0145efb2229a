// GEMM on the GPU through cuBLAS. cuBLAS is column-major: a row-major matrix is the
// column-major storage of its transpose, so C = op(A)·op(B) (row-major) is computed as
// Cᵀ = op(B)ᵀ·op(A)ᵀ (column-major), i.e. the operands swap and m and n swap. The default
// math mode keeps fp32 GEMMs in true fp32 (no TF32), so they agree with the CPU twin.
#include "kernels/cpu/blas_dims.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cuda {
namespace {

cublasStatus_t call_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         const float* alpha, const float* a, int lda, const float* b, int ldb,
                         const float* beta, float* c, int ldc) {
  return cublasSgemm(detail::cublas(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t call_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         const double* alpha, const double* a, int lda, const double* b, int ldb,
                         const double* beta, double* c, int ldc) {
  return cublasDgemm(detail::cublas(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const auto d = mlps::detail::gemm_dims(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  // Column-major view: (n×m) = op(B)ᵀ (n×k) · op(A)ᵀ (k×m).
  MLPS_CUBLAS_CHECK(call_gemm(trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                              trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d.n, d.m, d.k, &alpha, b,
                              d.ldb, a, d.lda, &beta, c, d.ldc));
}

MLPS_INSTANTIATE_KERNELS(MLPS_GEMM_INSTANCES)

}  // namespace mlps::cuda
