#pragma once
// The one rule by which the schemes split a dimension (bin/tensor2d: the batch over replicas ×
// grid rows; features, weight rows and columns, biases, γ, β and logits over the grid): n elements
// over `parts` contiguous parts, part p holding ⌊n/parts⌋ elements plus one when
// p < n mod parts (the first n mod parts parts are one longer). Every rank derives every part
// from (n, parts), so a message whose size depends on its source block needs no size exchange.
#include <algorithm>
#include <cstdint>

namespace mlps {

constexpr int64_t part_size(int64_t n, int64_t parts, int64_t p) {
  return n / parts + (p < n % parts ? 1 : 0);
}
constexpr int64_t part_first(int64_t n, int64_t parts, int64_t p) {
  return p * (n / parts) + std::min(p, n % parts);
}
// Part 0's size: every part fits in it (collectives that need equal counts pad to it).
constexpr int64_t largest_part(int64_t n, int64_t parts) { return (n + parts - 1) / parts; }

}  // namespace mlps
