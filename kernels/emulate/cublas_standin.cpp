// The cuBLAS stand-in of the emulated-GPU build (see include/cublas_v2.h).
#include <cblas.h>
#include <cublas_v2.h>

#include <algorithm>

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

bool transposed(cublasOperation_t op) { return op != CUBLAS_OP_N; }  // real types: C is T

// cuBLAS's checks for gemm: op(A) is m×k, op(B) is k×n, C is m×n, all column-major.
cublasStatus_t check_gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                          int m, int n, int k, int lda, int ldb, int ldc) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto legal_op = [](cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  if (!legal_op(ta) || !legal_op(tb) || m < 0 || n < 0 || k < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < std::max(1, transposed(ta) ? k : m) || ldb < std::max(1, transposed(tb) ? n : k) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

CBLAS_TRANSPOSE cblas_op(cublasOperation_t op) { return transposed(op) ? CblasTrans : CblasNoTrans; }

// Inputs written by earlier work on the stream must be there before the host reads them.
cublasStatus_t wait_for_inputs(cublasHandle_t handle) {
  return cudaStreamSynchronize(handle->stream) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                              : CUBLAS_STATUS_EXECUTION_FAILED;
}

// Sgemm and Dgemm: cuBLAS's checks, then the column-major cblas call (cblas_sgemm or
// cblas_dgemm) once earlier work on the stream has finished.
template <typename T, typename CblasGemm>
cublasStatus_t gemm(CblasGemm cblas_gemm, cublasHandle_t handle, cublasOperation_t transa,
                    cublasOperation_t transb, int m, int n, int k, const T* alpha, const T* a,
                    int lda, const T* b, int ldb, const T* beta, T* c, int ldc) {
  if (const auto status = check_gemm(handle, transa, transb, m, n, k, lda, ldb, ldc))
    return status;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (const auto status = wait_for_inputs(handle)) return status;
  cblas_gemm(CblasColMajor, cblas_op(transa), cblas_op(transb), m, n, k, *alpha, a, lda, b, ldb,
             *beta, c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
  return gemm(cblas_sgemm, handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const double* alpha,
                           const double* a, int lda, const double* b, int ldb,
                           const double* beta, double* c, int ldc) {
  return gemm(cblas_dgemm, handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
  }
  return "unknown status";
}
