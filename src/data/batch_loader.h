#pragma once
// Gathers one rank's share of a batch into host memory: pixels as rows x features floats and
// labels as int32, ready to copy to the device.
#include <cstdint>
#include <vector>

#include "src/data/dataset.h"

namespace mlps {

struct HostBatch {
  int64_t rows = 0;
  int64_t features = 0;         // image_size * image_size
  std::vector<float> pixels;    // rows x features, row-major
  std::vector<int32_t> labels;  // rows
};

// Samples order[first], ..., order[first + count - 1] of `split`; the caller passes the offset
// of its rank's slice of the global batch. Throws std::out_of_range past the end of `order`.
HostBatch load_batch(const Dataset& dataset, Split split, const std::vector<int64_t>& order,
                     int64_t first, int64_t count, int image_size);

// Samples first, ..., first + count - 1 of `split` in index order (evaluation).
HostBatch load_batch_range(const Dataset& dataset, Split split, int64_t first, int64_t count,
                           int image_size);

}  // namespace mlps
