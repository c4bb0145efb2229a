// LayerNorm on the CPU. Statistics and reductions are accumulated in double; each row is
// walked a few times while it sits in cache; rows (and dgamma/dbeta's columns) are split across
// the rank's threads. 16-bit rows keep their statistics and γ/β gradients in fp32 (Acc<T>).
#include <cmath>

#include "kernels/cpu/layernorm_rows.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/aliasing.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

template <typename T>
void layernorm_forward(T* y, Acc<T>* mean, Acc<T>* rstd, const T* x, const T* gamma,
                       const T* beta, int64_t rows, int64_t cols, double eps) {
  if (cols == 0) return;
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      const detail::RowMoments moments = detail::row_moments_of(xr, cols);
      const double mu = moments.mean;
      const double var = moments.m2 / static_cast<double>(cols);
      const double rs = 1.0 / std::sqrt(var + eps);
      detail::normalize_row(y + r * cols, xr, gamma, beta, mu, rs, cols);
      mean[r] = static_cast<Acc<T>>(mu);
      rstd[r] = static_cast<Acc<T>>(rs);
    }
  });
}

template <typename T>
void layernorm_backward(T* dx, Acc<T>* dgamma, Acc<T>* dbeta, const T* dy, const T* x,
                        const Acc<T>* mean, const Acc<T>* rstd, const T* gamma, int64_t rows,
                        int64_t cols, bool accumulate) {
  if (cols == 0) return;
  mlps::detail::require_layernorm_backward_disjoint(dx, dy, x, rows, cols);
  // dgamma and dbeta first: dx may not alias dy or x, but the sums read both.
  detail::layernorm_parameter_grads(dgamma, dbeta, dy, x, mean, rstd, rows, cols, accumulate);
  const double inv_cols = 1.0 / static_cast<double>(cols);
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      const T* dyr = dy + r * cols;
      const double mu = static_cast<double>(mean[r]);
      const double rs = static_cast<double>(rstd[r]);
      // dx = rstd·(dxhat − mean(dxhat) − xhat·mean(dxhat·xhat))
      const detail::DxhatSums sums = detail::dxhat_sums(dyr, xr, gamma, mu, rs, cols);
      detail::layernorm_dx_row(dx + r * cols, dyr, xr, gamma, mu, rs, sums.dxhat * inv_cols,
                               sums.dxhat_xhat * inv_cols, cols);
    }
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_LAYERNORM_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_LAYERNORM_INSTANCES)

}  // namespace mlps::cpu
