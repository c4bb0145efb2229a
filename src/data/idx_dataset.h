#pragma once
// A Dataset over an MNIST-layout IDX directory (such as /usr/share/datasets/fashion-mnist).
#include <memory>
#include <string>

#include "src/data/dataset.h"

namespace mlps {

// Reads both splits into memory as bytes once; load() scales to [0, 1] and resizes.
// Throws InputError for a missing directory or file or a malformed one.
std::unique_ptr<Dataset> open_idx_dataset(const std::string& dir);

}  // namespace mlps
