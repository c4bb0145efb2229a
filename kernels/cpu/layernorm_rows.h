#pragma once
// LayerNorm's row reductions and row normalisation on the CPU, shared by the whole-row
// LayerNorm (layernorm_cpu.cpp) and the sliced one (sliced_rows_cpu.cpp), so that a row taken
// as one slice gives LayerNorm's own results.
#include <cstdint>

#include "kernels/cpu/column_sums.h"
#include "kernels/cpu/lane_sum.h"
#include "kernels/layernorm_row_sums.h"
#include "kernels/stored_values.h"

namespace mlps::cpu::detail {

using mlps::detail::DxhatSums;
using mlps::detail::RowMoments;

// Two passes (mean, then squared deviations) avoid the cancellation of E[x²] − E[x]².
template <typename T>
RowMoments row_moments_of(const T* xr, int64_t cols) {
  const double mu =
      lane_sum(cols, [&](int64_t c) { return static_cast<double>(widen(xr[c])); }) /
      static_cast<double>(cols);
  const double m2 = lane_sum(cols, [&](int64_t c) {
    const double d = static_cast<double>(widen(xr[c])) - mu;
    return d * d;
  });
  return {mu, m2};
}

template <typename T>
DxhatSums dxhat_sums(const T* dyr, const T* xr, const T* gamma, double mu, double rs,
                     int64_t cols) {
  auto xhat = [&](int64_t c) { return (static_cast<double>(widen(xr[c])) - mu) * rs; };
  auto dxhat = [&](int64_t c) {
    return static_cast<double>(widen(dyr[c])) * static_cast<double>(widen(gamma[c]));
  };
  const double sum_dxhat = lane_sum(cols, dxhat);
  return {sum_dxhat, lane_sum(cols, [&](int64_t c) { return dxhat(c) * xhat(c); })};
}

// y = (x − mean)·rstd·gamma + beta over one row: the forward pass of both LayerNorms.
template <typename T>
void normalize_row(T* yr, const T* xr, const T* gamma, const T* beta, double mu, double rs,
                   int64_t cols) {
  for (int64_t c = 0; c < cols; ++c)
    yr[c] = narrow<T>((static_cast<double>(widen(xr[c])) - mu) * rs *
                          static_cast<double>(widen(gamma[c])) +
                      static_cast<double>(widen(beta[c])));
}

// dx over one row, given the row's mean(dxhat) and mean(dxhat·xhat) (over the whole row, which
// a sliced LayerNorm's parts sum between them).
template <typename T>
void layernorm_dx_row(T* dxr, const T* dyr, const T* xr, const T* gamma, double mu, double rs,
                      double mean_dxhat, double mean_dxhat_xhat, int64_t cols) {
  for (int64_t c = 0; c < cols; ++c) {
    const double xhat = (static_cast<double>(widen(xr[c])) - mu) * rs;
    const double dxhat = static_cast<double>(widen(dyr[c])) * static_cast<double>(widen(gamma[c]));
    dxr[c] = narrow<T>(rs * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
  }
}

// dgamma = Σ_rows dy·xhat and dbeta = Σ_rows dy, each column summed in double in row order.
// A: the type of the statistics and the sums (Acc<T>).
template <typename T, typename A>
void layernorm_parameter_grads(A* dgamma, A* dbeta, const T* dy, const T* x, const A* mean,
                               const A* rstd, int64_t rows, int64_t cols, bool accumulate) {
  column_sums(dgamma, rows, cols, accumulate, [&](int64_t r, int64_t c) {
    const double xhat =
        (static_cast<double>(widen(x[r * cols + c])) - static_cast<double>(mean[r])) *
        static_cast<double>(rstd[r]);
    return static_cast<double>(widen(dy[r * cols + c])) * xhat;
  });
  column_sums(dbeta, rows, cols, accumulate, [&](int64_t r, int64_t c) {
    return static_cast<double>(widen(dy[r * cols + c]));
  });
}

}  // namespace mlps::cpu::detail
