// CUDA twins of the sliced-row kernels: row reductions with one block per row (in double, as
// layernorm_cuda.cu), element-wise applies as grid-stride loops, dgamma/dbeta as column
// reductions without atomics, the sub-matrix copy as cudaMemcpy2DAsync.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/layernorm_param_grad.cuh"
#include "kernels/cuda/layernorm_rows.cuh"
#include "kernels/half_types.h"
#include "kernels/kernel_instances.h"
#include "kernels/sliced_rows.h"

namespace mlps::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void row_moments_kernel(Acc<T>* moments, const T* x, int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const detail::RowMoments row = detail::block_row_moments(x + r * cols, cols);
    if (threadIdx.x == 0) {
      moments[2 * r] = static_cast<Acc<T>>(row.mean);
      moments[2 * r + 1] = static_cast<Acc<T>>(row.m2);
    }
  }
}

template <typename T>
__global__ void combine_row_moments_kernel(T* mean, T* rstd, const T* moments, int64_t parts,
                                           int64_t rows, int64_t cols_per_part, double eps) {
  const double n = static_cast<double>(cols_per_part);
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{gridDim.x} * blockDim.x) {
    double mu = 0.0;
    for (int64_t p = 0; p < parts; ++p) mu += static_cast<double>(moments[(p * rows + r) * 2]);
    mu /= static_cast<double>(parts);
    double m2 = 0.0;
    for (int64_t p = 0; p < parts; ++p) {
      const double d = static_cast<double>(moments[(p * rows + r) * 2]) - mu;
      m2 += static_cast<double>(moments[(p * rows + r) * 2 + 1]) + n * d * d;
    }
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(1.0 / sqrt(m2 / (n * static_cast<double>(parts)) + eps));
  }
}

template <typename T>
__global__ void layernorm_apply_kernel(T* y, const T* x, const Acc<T>* mean, const Acc<T>* rstd,
                                       const T* gamma, const T* beta, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols;
    const int64_t c = i % cols;
    y[i] = narrow<T>((static_cast<double>(widen(x[i])) - static_cast<double>(mean[r])) *
                         static_cast<double>(rstd[r]) * static_cast<double>(widen(gamma[c])) +
                     static_cast<double>(widen(beta[c])));
  }
}

template <typename T>
__global__ void backward_row_sums_kernel(Acc<T>* sums, const T* dy, const T* x,
                                         const Acc<T>* mean, const Acc<T>* rstd, const T* gamma,
                                         int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const double mu = static_cast<double>(mean[r]);
    const double rs = static_cast<double>(rstd[r]);
    const detail::DxhatSums row = detail::block_dxhat_sums(dyr, xr, gamma, mu, rs, cols);
    if (threadIdx.x == 0) {
      sums[2 * r] = static_cast<Acc<T>>(row.dxhat);
      sums[2 * r + 1] = static_cast<Acc<T>>(row.dxhat_xhat);
    }
  }
}

template <typename T>
__global__ void backward_apply_kernel(T* dx, const T* dy, const T* x, const Acc<T>* mean,
                                      const Acc<T>* rstd, const T* gamma, const Acc<T>* sums,
                                      int64_t n, int64_t cols, double inv_total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols;
    const int64_t c = i % cols;
    const double rs = static_cast<double>(rstd[r]);
    const double xhat = (static_cast<double>(widen(x[i])) - static_cast<double>(mean[r])) * rs;
    const double dxhat = static_cast<double>(widen(dy[i])) * static_cast<double>(widen(gamma[c]));
    dx[i] = narrow<T>(rs * (dxhat - static_cast<double>(sums[2 * r]) * inv_total -
                            xhat * static_cast<double>(sums[2 * r + 1]) * inv_total));
  }
}

}  // namespace

template <typename T>
void row_moments(Acc<T>* moments, const T* x, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  MLPS_LAUNCH(row_moments_kernel,
      detail::grid_blocks(rows, 1), detail::row_block_threads(cols), 0, detail::stream(),
      moments, x, rows, cols);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void combine_row_moments(T* mean, T* rstd, const T* moments, int64_t parts, int64_t rows,
                         int64_t cols_per_part, double eps) {
  if (rows == 0 || parts == 0 || cols_per_part == 0) return;
  MLPS_LAUNCH(combine_row_moments_kernel,
      detail::grid_blocks(rows, kThreads), kThreads, 0, detail::stream(),
      mean, rstd, moments, parts, rows, cols_per_part, eps);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layernorm_apply(T* y, const T* x, const Acc<T>* mean, const Acc<T>* rstd, const T* gamma,
                     const T* beta, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  MLPS_LAUNCH(layernorm_apply_kernel,
      detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      y, x, mean, rstd, gamma, beta, n, cols);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layernorm_backward_partial(Acc<T>* sums, Acc<T>* dgamma, Acc<T>* dbeta, const T* dy,
                                const T* x, const Acc<T>* mean, const Acc<T>* rstd,
                                const T* gamma, int64_t rows, int64_t cols, bool accumulate) {
  if (cols == 0) return;
  if (rows > 0) {
    MLPS_LAUNCH(backward_row_sums_kernel,
        detail::grid_blocks(rows, 1), detail::row_block_threads(cols), 0, detail::stream(),
        sums, dy, x, mean, rstd, gamma, rows, cols);
    MLPS_CUDA_CHECK_LAUNCH();
  }
  detail::launch_layernorm_param_grad(dgamma, dbeta, dy, x, mean, rstd, rows, cols, accumulate);
}

template <typename T>
void layernorm_backward_apply(T* dx, const T* dy, const T* x, const Acc<T>* mean,
                              const Acc<T>* rstd, const T* gamma, const Acc<T>* sums,
                              int64_t rows, int64_t cols, int64_t total_cols) {
  const int64_t n = rows * cols;
  if (n == 0 || total_cols == 0) return;
  MLPS_LAUNCH(backward_apply_kernel,
      detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      dx, dy, x, mean, rstd, gamma, sums, n, cols, 1.0 / static_cast<double>(total_cols));
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void copy_2d(T* dst, int64_t dst_ld, const T* src, int64_t src_ld, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  MLPS_CUDA_CHECK(cudaMemcpy2DAsync(dst, sizeof(T) * static_cast<size_t>(dst_ld), src,
                                    sizeof(T) * static_cast<size_t>(src_ld),
                                    sizeof(T) * static_cast<size_t>(cols),
                                    static_cast<size_t>(rows), cudaMemcpyDeviceToDevice,
                                    detail::stream()));
}

MLPS_INSTANTIATE_KERNELS(MLPS_SLICED_ROWS_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_SLICED_ROWS_INSTANCES)
MLPS_INSTANTIATE_KERNELS(MLPS_COMBINE_ROW_MOMENTS_INSTANCES)
MLPS_INSTANTIATE_KERNELS(MLPS_COPY_2D_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_COPY_2D_INSTANCES)

}  // namespace mlps::cuda
