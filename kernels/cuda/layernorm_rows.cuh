#pragma once
// LayerNorm's two row reductions on the GPU, shared by the whole-row LayerNorm
// (layernorm_cuda.cu) and the sliced one (sliced_rows_cuda.cu), so that both add the same terms
// in the same order. One block per row: every thread of the block must call them (they
// synchronise), and each gets the block's sums.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/layernorm_row_sums.h"
#include "kernels/stored_values.h"

namespace mlps::cuda::detail {

using mlps::detail::DxhatSums;
using mlps::detail::RowMoments;

// Two passes (mean, then squared deviations) avoid the cancellation of E[x²] − E[x]².
template <typename T>
__device__ RowMoments block_row_moments(const T* xr, int64_t cols) {
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum += static_cast<double>(widen(xr[c]));
  const double mu = block_sum(sum) / static_cast<double>(cols);
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double d = static_cast<double>(widen(xr[c])) - mu;
    sq += d * d;
  }
  return {mu, block_sum(sq)};
}

template <typename T>
__device__ DxhatSums block_dxhat_sums(const T* dyr, const T* xr, const T* gamma, double mu,
                                      double rs, int64_t cols) {
  double sum_dxhat = 0.0;
  double sum_dxhat_xhat = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double dxhat =
        static_cast<double>(widen(dyr[c])) * static_cast<double>(widen(gamma[c]));
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * (static_cast<double>(widen(xr[c])) - mu) * rs;
  }
  const double total_dxhat = block_sum(sum_dxhat);
  return {total_dxhat, block_sum(sum_dxhat_xhat)};
}

}  // namespace mlps::cuda::detail
