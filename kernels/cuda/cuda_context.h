#pragma once
// The process-wide CUDA context of the kernels: one stream on which every kernel, copy, cuBLAS
// call and event runs, and a copy stream for the copies that overlap them (both created lazily
// on the device current at first use, so callers pick the GPU with cudaSetDevice before
// touching any kernel), and the error checks that turn a failed CUDA or cuBLAS call into
// std::runtime_error naming the call and file:line.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace mlps::cuda::detail {

cudaStream_t stream();
// Copies that overlap the kernels (copy_stream_cuda.cu); non-blocking, so that it never waits
// for the legacy default stream either.
cudaStream_t copy_stream();
cublasHandle_t cublas();

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expr, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file,
                                     int line);

// Blocks for a grid-stride loop over n items (n > 0): enough to fill any GPU, never more than
// the items need.
inline unsigned int grid_blocks(int64_t n, int threads_per_block) {
  const int64_t blocks = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned int>(std::min<int64_t>(blocks, int64_t{1} << 20));
}

}  // namespace mlps::cuda::detail

#define MLPS_CUDA_CHECK(expr)                                                        \
  do {                                                                               \
    const cudaError_t mlps_status_ = (expr);                                         \
    if (mlps_status_ != cudaSuccess)                                                 \
      ::mlps::cuda::detail::throw_cuda_error(mlps_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define MLPS_CUBLAS_CHECK(expr)                                                          \
  do {                                                                                   \
    const cublasStatus_t mlps_status_ = (expr);                                          \
    if (mlps_status_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::mlps::cuda::detail::throw_cublas_error(mlps_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: reports bad launch configurations at once (and, because launches
// are asynchronous, faults of earlier kernels).
#define MLPS_CUDA_CHECK_LAUNCH() MLPS_CUDA_CHECK(cudaGetLastError())
