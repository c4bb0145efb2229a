#pragma once
// Per-iteration, per-rank figures: what the timers record and the result files hold.
#include <cstdint>
#include <vector>

namespace mlps {

// Row-major [iterations × ranks] table of seconds or bytes.
struct IterationRankTable {
  int64_t iterations = 0;
  int64_t ranks = 0;
  std::vector<double> values;  // values[i * ranks + r]
};

}  // namespace mlps
