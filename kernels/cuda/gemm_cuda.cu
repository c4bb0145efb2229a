// GEMM on the GPU through cublasGemmEx, whose compute type says what the multiplications may
// round their inputs to (GemmCompute): true fp32 (CUBLAS_COMPUTE_32F on a handle whose math
// mode is set to the default explicitly, so no environment or earlier setting turns on TF32),
// TF32 tensor cores, or bf16/fp16 tensor cores for mixed precision, whose fp32 buffers hold
// 16-bit values that the tensor cores then multiply exactly; sums are fp32 in every case.
// cuBLAS is column-major: a row-major matrix is the column-major storage of its transpose, so
// C = op(A)·op(B) (row-major) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ (column-major), i.e. the
// operands swap and m and n swap.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/cpu/blas_dims.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/half_types.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cuda {
namespace {

// Per GemmCompute, in the enum's order: cuBLAS's compute type for fp32 operands and its name.
struct ComputeType {
  cublasComputeType_t type;
  const char* call;
};
constexpr ComputeType kComputeTypes[] = {
    {CUBLAS_COMPUTE_32F, "cublasGemmEx(CUDA_R_32F, CUBLAS_COMPUTE_32F)"},
    {CUBLAS_COMPUTE_32F_FAST_TF32, "cublasGemmEx(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32)"},
    {CUBLAS_COMPUTE_32F_FAST_16BF, "cublasGemmEx(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF)"},
    {CUBLAS_COMPUTE_32F_FAST_16F, "cublasGemmEx(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F)"},
};

const ComputeType& compute_type(GemmCompute compute) {
  return kComputeTypes[static_cast<int>(compute)];
}

// Typed buffers go to cuBLAS as they are: the host types must be CUDA's, byte for byte.
static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && alignof(bf16) == alignof(__nv_bfloat16));
static_assert(sizeof(fp16) == sizeof(__half) && alignof(fp16) == alignof(__half));

template <typename S>
constexpr cudaDataType cuda_type() {
  return std::is_same_v<S, bf16> ? CUDA_R_16BF : CUDA_R_16F;
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, GemmCompute compute) {
  if (m == 0 || n == 0) return;
  const auto d = mlps::detail::gemm_dims(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  constexpr bool single = std::is_same_v<T, float>;
  const cudaDataType type = single ? CUDA_R_32F : CUDA_R_64F;
  // alpha and beta are of the compute type's scale type: float for the 32F ones, double for 64F.
  const cublasComputeType_t compute_as =
      single ? compute_type(compute).type : CUBLAS_COMPUTE_64F;
  // Column-major view: (n×m) = op(B)ᵀ (n×k) · op(A)ᵀ (k×m).
  MLPS_CUBLAS_CHECK(cublasGemmEx(detail::cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d.n, d.m, d.k, &alpha, b,
                                 type, d.ldb, a, type, d.lda, &beta, c, type, d.ldc, compute_as,
                                 CUBLAS_GEMM_DEFAULT));
}

template <typename S, typename C>
void gemm_16bit(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const S* a, int64_t lda, const S* b, int64_t ldb, float beta, C* c, int64_t ldc,
                float* /*scratch: none needed*/) {
  if (m == 0 || n == 0) return;
  const auto d = mlps::detail::gemm_dims(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  const cudaDataType in = cuda_type<S>(), out = std::is_same_v<C, float> ? CUDA_R_32F : in;
  // 16-bit inputs, fp32 sums (CUBLAS_COMPUTE_32F, float alpha and beta): the tensor cores.
  MLPS_CUBLAS_CHECK(cublasGemmEx(detail::cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d.n, d.m, d.k, &alpha, b, in,
                                 d.ldb, a, in, d.lda, &beta, c, out, d.ldc, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
}

int64_t gemm_16bit_scratch(int64_t, int64_t, int64_t, bool) { return 0; }

const char* gemm_16bit_call(StorageFormat format) {
  return format == StorageFormat::fp16 ? "cublasGemmEx(CUDA_R_16F, CUBLAS_COMPUTE_32F)"
                                       : "cublasGemmEx(CUDA_R_16BF, CUBLAS_COMPUTE_32F)";
}

const char* gemm_call(GemmCompute compute, bool fp64) {
  return fp64 ? "cublasGemmEx(CUDA_R_64F, CUBLAS_COMPUTE_64F)" : compute_type(compute).call;
}

MLPS_INSTANTIATE_KERNELS(MLPS_GEMM_INSTANCES)
MLPS_INSTANTIATE_16BIT_GEMM()

}  // namespace mlps::cuda
