#pragma once
// The class each row of softmax probabilities predicts (the arg-max), read from the device:
// what every scheme's accuracy count uses.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/device/device.h"

namespace mlps {

template <typename T>
std::vector<int32_t> predicted_classes(const Device& device, const T* probs, int64_t rows,
                                       int64_t classes) {
  std::vector<T> host(static_cast<size_t>(rows * classes));
  device.to_host(host.data(), probs, sizeof(T) * host.size());
  std::vector<int32_t> predicted(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = host.data() + r * classes;
    predicted[r] = static_cast<int32_t>(std::max_element(row, row + classes) - row);
  }
  return predicted;
}

}  // namespace mlps
