#pragma once
// The CPU column reductions (bias_grad, LayerNorm's dgamma/dbeta): out[c] = Σ_r term(r, c),
// summed in double over r = 0, 1, ... in that order and rounded once into the output (added to
// it when accumulating gradients). The columns are split across the rank's threads, so a
// column's sum is the same whatever the thread count; each thread walks its columns in blocks
// that stay in cache while the rows stream past, every access contiguous.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel_loops.h"

namespace mlps::cpu::detail {

template <typename T, typename Term>
MLPS_VECTOR_CLONES void column_block_sums(T* out, int64_t rows, int64_t c0, int64_t c1,
                                          bool accumulate, const Term& term) {
  constexpr int64_t kBlock = 512;
  double sum[kBlock];
  for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
    const int64_t width = std::min(kBlock, c1 - b0);
    std::fill(sum, sum + width, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c) sum[c] += term(r, b0 + c);
    for (int64_t c = 0; c < width; ++c) {
      const double total = accumulate ? static_cast<double>(out[b0 + c]) + sum[c] : sum[c];
      out[b0 + c] = static_cast<T>(total);
    }
  }
}

template <typename T, typename Term>
void column_sums(T* out, int64_t rows, int64_t cols, bool accumulate, const Term& term) {
  parallel_columns(rows, cols, [&](int64_t c0, int64_t c1) {
    column_block_sums(out, rows, c0, c1, accumulate, term);
  });
}

}  // namespace mlps::cpu::detail
