#pragma once
// The last step of the CPU column reductions (bias_grad, LayerNorm's dgamma/dbeta): the double
// sums rounded once into the output, added to it when accumulating gradients.
#include <cstddef>
#include <vector>

namespace mlps::cpu::detail {

template <typename T>
void store_column_sums(T* out, const std::vector<double>& sums, bool accumulate) {
  for (size_t c = 0; c < sums.size(); ++c)
    out[c] = static_cast<T>(accumulate ? static_cast<double>(out[c]) + sums[c] : sums[c]);
}

}  // namespace mlps::cpu::detail
