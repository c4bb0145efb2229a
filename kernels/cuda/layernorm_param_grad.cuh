#pragma once
// LayerNorm's dγ and dβ: column sums over the rows of dy·x̂ and dy, in fp64, shared by the whole
// LayerNorm (layernorm_cuda.cu) and the sliced one of the tensor-parallel schemes
// (sliced_rows_cuda.cu), whose parameter gradients are the same column sums over local rows.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/stored_values.h"

namespace mlps::cuda::detail {

// A: the type of the statistics and the sums (Acc<T>).
template <typename T, typename A>
__global__ void layernorm_param_grad_kernel(A* dgamma, A* dbeta, const T* dy, const T* x,
                                            const A* mean, const A* rstd, int64_t rows,
                                            int64_t cols, bool accumulate) {
  __shared__ double partial_gamma[kRowLanes][kColumnTile + 1];
  __shared__ double partial_beta[kRowLanes][kColumnTile + 1];
  const int64_t c = blockIdx.x * int64_t{kColumnTile} + threadIdx.x;
  double sum_gamma = 0.0;
  double sum_beta = 0.0;
  if (c < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += kRowLanes) {
      const double g = static_cast<double>(widen(dy[r * cols + c]));
      const double xhat =
          (static_cast<double>(widen(x[r * cols + c])) - static_cast<double>(mean[r])) *
          static_cast<double>(rstd[r]);
      sum_gamma += g * xhat;
      sum_beta += g;
    }
  }
  partial_gamma[threadIdx.y][threadIdx.x] = sum_gamma;
  partial_beta[threadIdx.y][threadIdx.x] = sum_beta;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double total_gamma = 0.0;
    double total_beta = 0.0;
    for (int lane = 0; lane < kRowLanes; ++lane) {
      total_gamma += partial_gamma[lane][threadIdx.x];
      total_beta += partial_beta[lane][threadIdx.x];
    }
    dgamma[c] = static_cast<A>(accumulate ? static_cast<double>(dgamma[c]) + total_gamma
                                          : total_gamma);
    dbeta[c] =
        static_cast<A>(accumulate ? static_cast<double>(dbeta[c]) + total_beta : total_beta);
  }
}

// dγ[c] (+)= Σ_r dy·x̂, dβ[c] (+)= Σ_r dy over `rows` rows of `cols` columns.
template <typename T, typename A>
void launch_layernorm_param_grad(A* dgamma, A* dbeta, const T* dy, const T* x, const A* mean,
                                 const A* rstd, int64_t rows, int64_t cols, bool accumulate) {
  const dim3 block(kColumnTile, kRowLanes);
  const auto blocks = static_cast<unsigned int>((cols + kColumnTile - 1) / kColumnTile);
  MLPS_LAUNCH(layernorm_param_grad_kernel, blocks, block, 0, stream(),
      dgamma, dbeta, dy, x, mean, rstd, rows, cols, accumulate);
  MLPS_CUDA_CHECK_LAUNCH();
}

}  // namespace mlps::cuda::detail
