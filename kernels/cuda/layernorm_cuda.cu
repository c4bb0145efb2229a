// LayerNorm on the GPU. Forward and dx: one block per row with block reductions in double
// (two passes for the variance, as the CPU twin). dgamma/dbeta: column reductions over the
// rows, xhat recomputed from the saved mean and rstd. 16-bit rows keep their statistics and
// γ/β gradients in fp32 (Acc<T>).
#include "kernels/aliasing.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/layernorm_param_grad.cuh"
#include "kernels/cuda/layernorm_rows.cuh"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/stored_values.h"

namespace mlps::cuda {
namespace {

template <typename T, typename A>
__global__ void layernorm_forward_kernel(T* y, A* mean, A* rstd, const T* x, const T* gamma,
                                         const T* beta, int64_t rows, int64_t cols,
                                         double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const detail::RowMoments moments = detail::block_row_moments(xr, cols);
    const double mu = moments.mean;
    const double var = moments.m2 / static_cast<double>(cols);
    const double rs = 1.0 / sqrt(var + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      yr[c] = narrow<T>((static_cast<double>(widen(xr[c])) - mu) * rs *
                            static_cast<double>(widen(gamma[c])) +
                        static_cast<double>(widen(beta[c])));
    if (threadIdx.x == 0) {
      mean[r] = static_cast<A>(mu);
      rstd[r] = static_cast<A>(rs);
    }
  }
}

// dx = rstd·(dxhat − mean(dxhat) − xhat·mean(dxhat·xhat)), dxhat = dy·gamma
template <typename T, typename A>
__global__ void layernorm_dx_kernel(T* dx, const T* dy, const T* x, const A* mean,
                                    const A* rstd, const T* gamma, int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    const double mu = static_cast<double>(mean[r]);
    const double rs = static_cast<double>(rstd[r]);
    const detail::DxhatSums sums = detail::block_dxhat_sums(dyr, xr, gamma, mu, rs, cols);
    const double mean_dxhat = sums.dxhat / static_cast<double>(cols);
    const double mean_dxhat_xhat = sums.dxhat_xhat / static_cast<double>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double dxhat =
          static_cast<double>(widen(dyr[c])) * static_cast<double>(widen(gamma[c]));
      const double xhat = (static_cast<double>(widen(xr[c])) - mu) * rs;
      dxr[c] = narrow<T>(rs * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
  }
}

}  // namespace

template <typename T>
void layernorm_forward(T* y, Acc<T>* mean, Acc<T>* rstd, const T* x, const T* gamma,
                       const T* beta, int64_t rows, int64_t cols, double eps) {
  if (rows == 0 || cols == 0) return;
  const int threads = detail::row_block_threads(cols);
  MLPS_LAUNCH(layernorm_forward_kernel, detail::grid_blocks(rows, 1), threads, 0, detail::stream(),
      y, mean, rstd, x, gamma, beta, rows, cols, eps);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layernorm_backward(T* dx, Acc<T>* dgamma, Acc<T>* dbeta, const T* dy, const T* x,
                        const Acc<T>* mean, const Acc<T>* rstd, const T* gamma, int64_t rows,
                        int64_t cols, bool accumulate) {
  if (cols == 0) return;
  mlps::detail::require_layernorm_backward_disjoint(dx, dy, x, rows, cols);
  if (rows > 0) {
    const int threads = detail::row_block_threads(cols);
    MLPS_LAUNCH(layernorm_dx_kernel, detail::grid_blocks(rows, 1), threads, 0, detail::stream(),
        dx, dy, x, mean, rstd, gamma, rows, cols);
    MLPS_CUDA_CHECK_LAUNCH();
  }
  detail::launch_layernorm_param_grad(dgamma, dbeta, dy, x, mean, rstd, rows, cols, accumulate);
}

MLPS_INSTANTIATE_KERNELS(MLPS_LAYERNORM_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_LAYERNORM_INSTANCES)

}  // namespace mlps::cuda
