// LayerNorm on the CPU. Statistics and reductions are accumulated in double; each row is
// walked a few times while it sits in cache, and the dgamma/dbeta column sums go row by row
// into double accumulators so every access is contiguous.
#include <cmath>
#include <vector>

#include "kernels/cpu/column_sums.h"
#include "kernels/cpu/layernorm_rows.h"
#include "kernels/aliasing.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int64_t rows, int64_t cols, double eps) {
  if (cols == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const detail::RowMoments moments = detail::row_moments_of(xr, cols);
    const double mu = moments.mean;
    const double var = moments.m2 / static_cast<double>(cols);
    const double rs = 1.0 / std::sqrt(var + eps);
    detail::normalize_row(y + r * cols, xr, gamma, beta, mu, rs, cols);
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(rs);
  }
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int64_t rows, int64_t cols,
                        bool accumulate) {
  if (cols == 0) return;
  mlps::detail::require_layernorm_backward_disjoint(dx, dy, x, rows, cols);
  std::vector<double> dgamma_sum(static_cast<size_t>(cols), 0.0);
  std::vector<double> dbeta_sum(static_cast<size_t>(cols), 0.0);
  const double inv_cols = 1.0 / static_cast<double>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    const double mu = static_cast<double>(mean[r]);
    const double rs = static_cast<double>(rstd[r]);
    auto xhat = [&](int64_t c) { return (static_cast<double>(xr[c]) - mu) * rs; };
    auto dxhat = [&](int64_t c) {
      return static_cast<double>(dyr[c]) * static_cast<double>(gamma[c]);
    };
    // dx = rstd·(dxhat − mean(dxhat) − xhat·mean(dxhat·xhat))
    const detail::DxhatSums sums = detail::dxhat_sums(dyr, xr, gamma, mu, rs, cols);
    const double mean_dxhat = sums.dxhat * inv_cols;
    const double mean_dxhat_xhat = sums.dxhat_xhat * inv_cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double xh = xhat(c);
      const double g = static_cast<double>(dyr[c]);
      dgamma_sum[c] += g * xh;
      dbeta_sum[c] += g;
      dxr[c] = static_cast<T>(rs * (dxhat(c) - mean_dxhat - xh * mean_dxhat_xhat));
    }
  }
  detail::store_column_sums(dgamma, dgamma_sum, accumulate);
  detail::store_column_sums(dbeta, dbeta_sum, accumulate);
}

MLPS_INSTANTIATE_KERNELS(MLPS_LAYERNORM_INSTANCES)

}  // namespace mlps::cpu
