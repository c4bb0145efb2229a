#include "src/data/batch_loader.h"

#include <stdexcept>
#include <string>

namespace mlps {
namespace {

// Loads count samples, the i-th being sample_at(i).
template <typename IndexOf>
HostBatch load_samples(const Dataset& dataset, Split split, int64_t count, int image_size,
                       IndexOf sample_at) {
  if (image_size <= 0) throw std::invalid_argument("image size must be positive");
  HostBatch batch;
  batch.rows = count;
  batch.features = int64_t{image_size} * image_size;
  batch.pixels.resize(static_cast<size_t>(batch.rows * batch.features));
  batch.labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    batch.labels[static_cast<size_t>(i)] = dataset.load(
        split, sample_at(i), image_size, batch.pixels.data() + i * batch.features);
  return batch;
}

void check_range(int64_t first, int64_t count, int64_t size, const char* what) {
  if (first < 0 || count < 0 || first + count > size)
    throw std::out_of_range("batch [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") is outside the " + what +
                            " of " + std::to_string(size) + " samples");
}

}  // namespace

HostBatch load_batch(const Dataset& dataset, Split split, const std::vector<int64_t>& order,
                     int64_t first, int64_t count, int image_size) {
  check_range(first, count, static_cast<int64_t>(order.size()), "order");
  return load_samples(dataset, split, count, image_size,
                      [&](int64_t i) { return order[static_cast<size_t>(first + i)]; });
}

HostBatch load_batch_range(const Dataset& dataset, Split split, int64_t first, int64_t count,
                           int image_size) {
  check_range(first, count, dataset.size(split), "split");
  return load_samples(dataset, split, count, image_size,
                      [&](int64_t i) { return first + i; });
}

}  // namespace mlps
