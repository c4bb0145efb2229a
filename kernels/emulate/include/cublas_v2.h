#pragma once
// The emulated-GPU build: the cuBLAS calls this project uses, over OpenBLAS on the host (the
// emulated GPU's memory is host memory). The semantics are cuBLAS's: column-major operands,
// its argument checks (a leading dimension too small for the operand is
// CUBLAS_STATUS_INVALID_VALUE), and stream order (a call runs after the work queued before it
// on the handle's stream and before the work queued after it). So a wrong operand order,
// transpose flag or leading dimension fails here as it would on a GPU. cublasGemmEx checks
// cuBLAS's type combinations (a compute type that does not go with the data types is
// CUBLAS_STATUS_NOT_SUPPORTED) and rounds inputs as the compute type says tensor cores do, and
// the stand-in counts its calls by types (the cublasStandin* functions, this build's own), so
// tests see what every GEMM of a step asked cuBLAS for.
#include <cuda_runtime.h>

#include <cstdint>

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

// library_types.h's values for the real types.
typedef enum {
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
} cudaDataType;

typedef enum {
  CUBLAS_COMPUTE_16F = 64,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

struct cublasContext;
typedef cublasContext* cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode);
// Implemented combinations (A and B of one type): 32F compute with 32F, 16BF or 16F inputs and a
// C of the input type or 32F; the FAST_16BF/16F/TF32 computes with 32F everywhere; 64F with 64F.
// Other combinations cuBLAS accepts (integers, complex, 16F compute) are not used here and return
// CUBLAS_STATUS_NOT_SUPPORTED, as an illegal one does on a GPU. Only CUBLAS_GEMM_DEFAULT.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);

// This build's own (not cuBLAS): since the last reset, the successful cublasGemmEx calls with
// inputs of `ab` type, C of `c` type and `compute`; all of them; and the input elements that
// the compute type's rounding changed (inputs a mixed-precision GEMM expected to hold 16-bit
// values already, or fp32 values TF32 shortens). Counted over every handle of the process.
int64_t cublasStandinGemmCalls(cudaDataType ab, cudaDataType c, cublasComputeType_t compute);
int64_t cublasStandinGemmCallsTotal();
int64_t cublasStandinRoundedInputs();
void cublasStandinResetCounts();
const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);
