#pragma once
// The order in which an epoch visits the training samples: a seeded permutation that is the
// same on every rank, platform and compiler, so the data-parallel ranks agree on which global
// batch holds which samples without communicating.
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/base/counter_hash.h"

namespace mlps {

// A permutation of 0 .. n-1, by Fisher-Yates driven by a counter-based generator keyed by
// (seed, epoch). Different epochs give different orders.
inline std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  if (n < 0) throw std::invalid_argument("epoch_order: negative sample count");
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // A domain tag keeps this stream apart from the synthetic images keyed by the same seed.
  constexpr uint64_t kShuffleDomain = 0x53485546464c45ull;  // "SHUFFLE"
  CounterStream stream(hash_combine(hash_combine(seed, kShuffleDomain),
                                    static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(stream.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

}  // namespace mlps
