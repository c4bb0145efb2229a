// The cuBLAS stand-in of the emulated-GPU build (see include/cublas_v2.h).
#include <cblas.h>
#include <cublas_v2.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/cpu/float16_bits.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
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

// Inputs written by earlier work on the stream must be there before the host reads them: a
// wait of the stand-in's (through HIP, so the runtime does not count it as the project's), in
// place of the one kernel launch cuBLAS would make (counted).
cublasStatus_t wait_for_inputs(cublasHandle_t handle) {
  mlps::emulate::tally().launches.fetch_add(1, std::memory_order_relaxed);
  return hipStreamSynchronize(handle->stream) == hipSuccess ? CUBLAS_STATUS_SUCCESS
                                                            : CUBLAS_STATUS_EXECUTION_FAILED;
}

// The stored extent of a column-major operand that is `rows` × `cols` as used (ld ≥ rows).
size_t extent(int rows, int cols, int ld) {
  return rows > 0 && cols > 0 ? static_cast<size_t>(cols - 1) * ld + rows : 0;
}

// An input operand as fp32, rounded as `compute` makes the tensor cores read it; counts the
// used elements the rounding changed (the elements between columns are copied untouched).
std::vector<float> float_operand(const void* x, cudaDataType type, int rows, int cols, int ld,
                                 cublasComputeType_t compute, int64_t& rounded) {
  std::vector<float> out(extent(rows, cols, ld));
  const auto* bits = static_cast<const uint16_t*>(x);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = type == CUDA_R_32F    ? static_cast<const float*>(x)[i]
             : type == CUDA_R_16BF ? mlps::cpu::bf16_bits_to_float(bits[i])
                                   : mlps::cpu::fp16_bits_to_float(bits[i]);
  float (*round)(float) = nullptr;
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) round = mlps::cpu::round_to_tf32;
  if (compute == CUBLAS_COMPUTE_32F_FAST_16BF)
    round = [](float v) { return mlps::cpu::bf16_bits_to_float(mlps::cpu::float_to_bf16_bits(v)); };
  if (compute == CUBLAS_COMPUTE_32F_FAST_16F)
    round = [](float v) { return mlps::cpu::fp16_bits_to_float(mlps::cpu::float_to_fp16_bits(v)); };
  if (!round) return out;
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) {
      float& v = out[static_cast<size_t>(c) * ld + r];
      const float to = round(v);
      if (std::bit_cast<uint32_t>(to) != std::bit_cast<uint32_t>(v)) ++rounded;
      v = to;
    }
  return out;
}

bool fast_compute(cublasComputeType_t t) {
  return t == CUBLAS_COMPUTE_32F_FAST_16BF || t == CUBLAS_COMPUTE_32F_FAST_16F ||
         t == CUBLAS_COMPUTE_32F_FAST_TF32;
}

// cuBLAS's table of cublasGemmEx's type combinations, as far as the stand-in implements it.
bool supported(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t compute) {
  if (a != b) return false;
  if (compute == CUBLAS_COMPUTE_64F) return a == CUDA_R_64F && c == CUDA_R_64F;
  if (fast_compute(compute)) return a == CUDA_R_32F && c == CUDA_R_32F;
  if (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC)
    return (a == CUDA_R_32F && c == CUDA_R_32F) ||
           ((a == CUDA_R_16BF || a == CUDA_R_16F) && (c == a || c == CUDA_R_32F));
  return false;
}

struct Counts {
  std::mutex mutex;
  std::map<std::tuple<int, int, int>, int64_t> calls;
  int64_t total = 0;
  int64_t rounded = 0;
};

Counts& counts() {
  static Counts instance;
  return instance;
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

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_PEDANTIC_MATH &&
      mode != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  if (const auto status = check_gemm(handle, transa, transb, m, n, k, lda, ldb, ldc))
    return status;
  if (!alpha || !beta || algo != CUBLAS_GEMM_DEFAULT) return CUBLAS_STATUS_INVALID_VALUE;
  if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
  // The TF32 math mode lets true-fp32 compute use TF32 tensor cores, as on a GPU.
  if (computeType == CUBLAS_COMPUTE_32F && handle->math == CUBLAS_TF32_TENSOR_OP_MATH &&
      Atype == CUDA_R_32F)
    computeType = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (m > 0 && n > 0) {
    if (const auto status = wait_for_inputs(handle)) return status;
  }
  int64_t rounded = 0;
  if (m > 0 && n > 0 && Atype == CUDA_R_64F) {
    cblas_dgemm(CblasColMajor, cblas_op(transa), cblas_op(transb), m, n, k,
                *static_cast<const double*>(alpha), static_cast<const double*>(A), lda,
                static_cast<const double*>(B), ldb, *static_cast<const double*>(beta),
                static_cast<double*>(C), ldc);
  } else if (m > 0 && n > 0) {
    // Inputs as fp32 (rounded as the compute type says), fp32 sums, C written in its type.
    const bool ta = transposed(transa), tb = transposed(transb);
    const std::vector<float> a =
        float_operand(A, Atype, ta ? k : m, ta ? m : k, lda, computeType, rounded);
    const std::vector<float> b =
        float_operand(B, Btype, tb ? n : k, tb ? k : n, ldb, computeType, rounded);
    const float alpha_f = *static_cast<const float*>(alpha);
    const float beta_f = *static_cast<const float*>(beta);
    if (Ctype == CUDA_R_32F) {
      cblas_sgemm(CblasColMajor, cblas_op(transa), cblas_op(transb), m, n, k, alpha_f, a.data(),
                  lda, b.data(), ldb, beta_f, static_cast<float*>(C), ldc);
    } else {
      auto* c = static_cast<uint16_t*>(C);
      std::vector<float> c32(extent(m, n, ldc));
      for (int col = 0; col < n; ++col)
        for (int row = 0; row < m; ++row) {
          const size_t i = static_cast<size_t>(col) * ldc + row;
          c32[i] = Ctype == CUDA_R_16BF ? mlps::cpu::bf16_bits_to_float(c[i])
                                        : mlps::cpu::fp16_bits_to_float(c[i]);
        }
      cblas_sgemm(CblasColMajor, cblas_op(transa), cblas_op(transb), m, n, k, alpha_f, a.data(),
                  lda, b.data(), ldb, beta_f, c32.data(), ldc);
      for (int col = 0; col < n; ++col)
        for (int row = 0; row < m; ++row) {
          const size_t i = static_cast<size_t>(col) * ldc + row;
          c[i] = Ctype == CUDA_R_16BF ? mlps::cpu::float_to_bf16_bits(c32[i])
                                      : mlps::cpu::float_to_fp16_bits(c32[i]);
        }
    }
  }
  Counts& n_ = counts();
  const std::lock_guard<std::mutex> lock(n_.mutex);
  ++n_.calls[{Atype, Ctype, computeType}];
  ++n_.total;
  n_.rounded += rounded;
  return CUBLAS_STATUS_SUCCESS;
}

int64_t cublasStandinGemmCalls(cudaDataType ab, cudaDataType c, cublasComputeType_t compute) {
  Counts& n = counts();
  const std::lock_guard<std::mutex> lock(n.mutex);
  const auto it = n.calls.find({ab, c, compute});
  return it == n.calls.end() ? 0 : it->second;
}

int64_t cublasStandinGemmCallsTotal() {
  Counts& n = counts();
  const std::lock_guard<std::mutex> lock(n.mutex);
  return n.total;
}

int64_t cublasStandinRoundedInputs() {
  Counts& n = counts();
  const std::lock_guard<std::mutex> lock(n.mutex);
  return n.rounded;
}

void cublasStandinResetCounts() {
  Counts& n = counts();
  const std::lock_guard<std::mutex> lock(n.mutex);
  n.calls.clear();
  n.total = 0;
  n.rounded = 0;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
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
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown status";
}
