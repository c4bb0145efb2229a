// CPU twins of the sliced-row kernels (LayerNorm split at its row reductions, sub-matrix copy).
// Sums in double over eight lanes, as layernorm_cpu.cpp, so a row split into one slice gives
// LayerNorm's own results.
#include <cmath>
#include <cstring>

#include "kernels/cpu/layernorm_rows.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/half_types.h"
#include "kernels/kernel_instances.h"
#include "kernels/sliced_rows.h"

namespace mlps::cpu {

template <typename T>
void row_moments(Acc<T>* moments, const T* x, int64_t rows, int64_t cols) {
  if (cols == 0) return;
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const detail::RowMoments row = detail::row_moments_of(x + r * cols, cols);
      moments[2 * r] = static_cast<Acc<T>>(row.mean);
      moments[2 * r + 1] = static_cast<Acc<T>>(row.m2);
    }
  });
}

template <typename T>
void combine_row_moments(T* mean, T* rstd, const T* moments, int64_t parts, int64_t rows,
                         int64_t cols_per_part, double eps) {
  if (parts == 0 || cols_per_part == 0) return;
  const double n = static_cast<double>(cols_per_part);
  for (int64_t r = 0; r < rows; ++r) {
    auto part = [&](int64_t p, int which) {
      return static_cast<double>(moments[(p * rows + r) * 2 + which]);
    };
    double mu = 0.0;
    for (int64_t p = 0; p < parts; ++p) mu += part(p, 0);
    mu /= static_cast<double>(parts);
    double m2 = 0.0;
    for (int64_t p = 0; p < parts; ++p) {
      const double d = part(p, 0) - mu;
      m2 += part(p, 1) + n * d * d;
    }
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(1.0 / std::sqrt(m2 / (n * static_cast<double>(parts)) + eps));
  }
}

template <typename T>
void layernorm_apply(T* y, const T* x, const Acc<T>* mean, const Acc<T>* rstd, const T* gamma,
                     const T* beta, int64_t rows, int64_t cols) {
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      detail::normalize_row(y + r * cols, x + r * cols, gamma, beta,
                            static_cast<double>(mean[r]), static_cast<double>(rstd[r]), cols);
  });
}

template <typename T>
void layernorm_backward_partial(Acc<T>* sums, Acc<T>* dgamma, Acc<T>* dbeta, const T* dy,
                                const T* x, const Acc<T>* mean, const Acc<T>* rstd,
                                const T* gamma, int64_t rows, int64_t cols, bool accumulate) {
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const detail::DxhatSums row =
          detail::dxhat_sums(dy + r * cols, x + r * cols, gamma, static_cast<double>(mean[r]),
                             static_cast<double>(rstd[r]), cols);
      sums[2 * r] = static_cast<Acc<T>>(row.dxhat);
      sums[2 * r + 1] = static_cast<Acc<T>>(row.dxhat_xhat);
    }
  });
  detail::layernorm_parameter_grads(dgamma, dbeta, dy, x, mean, rstd, rows, cols, accumulate);
}

template <typename T>
void layernorm_backward_apply(T* dx, const T* dy, const T* x, const Acc<T>* mean,
                              const Acc<T>* rstd, const T* gamma, const Acc<T>* sums,
                              int64_t rows, int64_t cols, int64_t total_cols) {
  if (total_cols == 0) return;
  const double inv_total = 1.0 / static_cast<double>(total_cols);
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      detail::layernorm_dx_row(dx + r * cols, dy + r * cols, x + r * cols, gamma,
                               static_cast<double>(mean[r]), static_cast<double>(rstd[r]),
                               static_cast<double>(sums[2 * r]) * inv_total,
                               static_cast<double>(sums[2 * r + 1]) * inv_total, cols);
  });
}

template <typename T>
void copy_2d(T* dst, int64_t dst_ld, const T* src, int64_t src_ld, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_ld, src + r * src_ld, sizeof(T) * static_cast<size_t>(cols));
}

MLPS_INSTANTIATE_KERNELS(MLPS_SLICED_ROWS_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_SLICED_ROWS_INSTANCES)
MLPS_INSTANTIATE_KERNELS(MLPS_COMBINE_ROW_MOMENTS_INSTANCES)
MLPS_INSTANTIATE_KERNELS(MLPS_COPY_2D_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_COPY_2D_INSTANCES)

}  // namespace mlps::cpu
