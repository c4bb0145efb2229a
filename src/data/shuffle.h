#pragma once
// The order in which an epoch visits the training samples: a seeded permutation that is the
// same on every rank, platform and compiler, so the data-parallel ranks agree on which global
// batch holds which samples without communicating.
#include <cstdint>
#include <vector>

namespace mlps {

// A permutation of 0 .. n-1, by Fisher-Yates driven by a counter-based generator keyed by
// (seed, epoch). Different epochs give different orders.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace mlps
