#include "kernels/cuda/cuda_context.h"

#include <stdexcept>
#include <string>

namespace mlps::cuda::detail {
namespace {

struct Context {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  Context() {
    // A blocking stream (cudaStreamCreate) still orders against the legacy default stream, so
    // code that uses plain cudaMemcpy elsewhere cannot race the kernels.
    MLPS_CUDA_CHECK(cudaStreamCreate(&stream));
    MLPS_CUBLAS_CHECK(cublasCreate(&cublas));
    MLPS_CUBLAS_CHECK(cublasSetStream(cublas, stream));
    // Explicit, not cuBLAS's default by chance: each GEMM's compute type alone decides whether
    // tensor cores round its inputs (gemm_cuda.cu).
    MLPS_CUBLAS_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH));
  }
};

// Leaked on purpose: destroying CUDA objects from static destructors races the driver's own
// shutdown at exit.
Context& context() {
  static Context* const instance = new Context();
  return *instance;
}

}  // namespace

cudaStream_t stream() { return context().stream; }
cublasHandle_t cublas() { return context().cublas; }

void throw_cuda_error(cudaError_t status, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // a non-sticky error must not resurface at the next launch check
  throw std::runtime_error(std::string("CUDA error at ") + file + ":" + std::to_string(line) +
                           ": " + expr + ": " + cudaGetErrorName(status) + ": " +
                           cudaGetErrorString(status));
}

void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  throw std::runtime_error(std::string("cuBLAS error at ") + file + ":" + std::to_string(line) +
                           ": " + expr + ": " + cublasGetStatusName(status) + ": " +
                           cublasGetStatusString(status));
}

}  // namespace mlps::cuda::detail
