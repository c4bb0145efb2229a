// Bias, ReLU and residual kernels on the GPU: grid-stride loops, bias_grad as a column
// reduction accumulated in double (no atomics, so results are reproducible). 16-bit tensors are
// read and written through widen/narrow (kernels/stored_values.h), with fp32 arithmetic.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/stored_values.h"

namespace mlps::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void bias_add_kernel(T* y, const T* bias, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = narrow<T>(widen(y[i]) + widen(bias[i % cols]));
}

template <typename T, typename A>
__global__ void bias_grad_kernel(A* dbias, const T* dy, int64_t rows, int64_t cols,
                                 bool accumulate) {
  __shared__ double partial[detail::kRowLanes][detail::kColumnTile + 1];
  const int64_t c = blockIdx.x * int64_t{detail::kColumnTile} + threadIdx.x;
  double sum = 0.0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += detail::kRowLanes)
      sum += static_cast<double>(widen(dy[r * cols + c]));
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double total = 0.0;
    for (int lane = 0; lane < detail::kRowLanes; ++lane) total += partial[lane][threadIdx.x];
    dbias[c] = static_cast<A>(accumulate ? static_cast<double>(dbias[c]) + total : total);
  }
}

template <typename T>
__global__ void relu_forward_kernel(T* y, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = widen(x[i]) > 0 ? x[i] : T{};
}

template <typename T>
__global__ void relu_backward_kernel(T* dx, const T* dy, const T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = widen(y[i]) > 0 ? dy[i] : T{};
}

template <typename T>
__global__ void residual_add_kernel(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = narrow<T>(widen(a[i]) + widen(b[i]));
}

}  // namespace

template <typename T>
void bias_add(T* y, const T* bias, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  MLPS_LAUNCH(bias_add_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      y, bias, n, cols);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void bias_grad(Acc<T>* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate) {
  if (cols == 0) return;
  const dim3 block(detail::kColumnTile, detail::kRowLanes);
  const auto blocks =
      static_cast<unsigned int>((cols + detail::kColumnTile - 1) / detail::kColumnTile);
  MLPS_LAUNCH(bias_grad_kernel, blocks, block, 0, detail::stream(),
      dbias, dy, rows, cols, accumulate);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void relu_forward(T* y, const T* x, int64_t n) {
  if (n == 0) return;
  MLPS_LAUNCH(relu_forward_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      y, x, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void relu_backward(T* dx, const T* dy, const T* y, int64_t n) {
  if (n == 0) return;
  MLPS_LAUNCH(relu_backward_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      dx, dy, y, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void residual_add(T* y, const T* a, const T* b, int64_t n) {
  if (n == 0) return;
  MLPS_LAUNCH(residual_add_kernel, detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      y, a, b, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_ELEMENTWISE_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_ELEMENTWISE_INSTANCES)

}  // namespace mlps::cuda
