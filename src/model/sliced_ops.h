#pragma once
// The sliced-row kernels (kernels/sliced_rows.h) on a rank's Device: the CPU or CUDA twin,
// as Device forwards the kernels of kernel_api.inc. With mixed precision, the activations and
// activation gradients they produce are rounded to 16 bits, as Device's LayerNorm rounds them:
// GEMMs read them next, and on tensor cores only 16-bit inputs multiply exactly (typed 16-bit
// storage writes them rounded). Row statistics and partial sums are Acc<T>.
#include "kernels/sliced_rows.h"
#include "src/device/device.h"

namespace mlps::sliced {

#ifdef MLPSCALE_WITH_CUDA
#define MLPS_SLICED_ON(device, fn, ...) \
  ((device).kind() == DeviceKind::cuda ? cuda::fn(__VA_ARGS__) : cpu::fn(__VA_ARGS__))
#else
#define MLPS_SLICED_ON(device, fn, ...) ((void)(device), cpu::fn(__VA_ARGS__))
#endif

template <typename T>
void row_moments(const Device& d, Acc<T>* moments, const T* x, int64_t rows, int64_t cols) {
  MLPS_SLICED_ON(d, row_moments, moments, x, rows, cols);
}
template <typename T>
void combine_row_moments(const Device& d, T* mean, T* rstd, const T* moments, int64_t parts,
                         int64_t rows, int64_t cols_per_part, double eps) {
  MLPS_SLICED_ON(d, combine_row_moments, mean, rstd, moments, parts, rows, cols_per_part, eps);
}
template <typename T>
void layernorm_apply(const Device& d, T* y, const T* x, const Acc<T>* mean, const Acc<T>* rstd,
                     const T* gamma, const T* beta, int64_t rows, int64_t cols) {
  MLPS_SLICED_ON(d, layernorm_apply, y, x, mean, rstd, gamma, beta, rows, cols);
  d.round_to_storage(y, rows * cols);
}
template <typename T>
void layernorm_backward_partial(const Device& d, Acc<T>* sums, Acc<T>* dgamma, Acc<T>* dbeta,
                                const T* dy, const T* x, const Acc<T>* mean, const Acc<T>* rstd,
                                const T* gamma, int64_t rows, int64_t cols, bool accumulate) {
  MLPS_SLICED_ON(d, layernorm_backward_partial, sums, dgamma, dbeta, dy, x, mean, rstd, gamma,
                 rows, cols, accumulate);
}
template <typename T>
void layernorm_backward_apply(const Device& d, T* dx, const T* dy, const T* x,
                              const Acc<T>* mean, const Acc<T>* rstd, const T* gamma,
                              const Acc<T>* sums, int64_t rows, int64_t cols,
                              int64_t total_cols) {
  MLPS_SLICED_ON(d, layernorm_backward_apply, dx, dy, x, mean, rstd, gamma, sums, rows, cols,
                 total_cols);
  d.round_to_storage(dx, rows * cols);
}
template <typename T>
void copy_2d(const Device& d, T* dst, int64_t dst_ld, const T* src, int64_t src_ld, int64_t rows,
             int64_t cols) {
  MLPS_SLICED_ON(d, copy_2d, dst, dst_ld, src, src_ld, rows, cols);
}

#undef MLPS_SLICED_ON

}  // namespace mlps::sliced
