#pragma once
// What LayerNorm's two row reductions return on either backend (kernels/cpu/layernorm_rows.h,
// kernels/cuda/layernorm_rows.cuh): the same sums, under the same names.

namespace mlps::detail {

struct RowMoments {
  double mean;
  double m2;  // Σ_c (x − mean)²
};

struct DxhatSums {
  double dxhat;       // Σ_c dxhat, dxhat = dy·gamma
  double dxhat_xhat;  // Σ_c dxhat·xhat, xhat = (x − mean)·rstd
};

}  // namespace mlps::detail
