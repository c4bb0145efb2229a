#pragma once
// Sums in double over eight independent lanes: strict IEEE code (no -ffast-math) cannot
// vectorise a single running sum, but it can vectorise eight of them, and the fixed order keeps
// results deterministic.
#include <cstdint>

namespace mlps::cpu::detail {

template <typename Term>
inline double lane_sum(int64_t n, Term term) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += term(i + j);
  double tail = 0.0;
  for (; i < n; ++i) tail += term(i);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + tail;
}

}  // namespace mlps::cpu::detail
