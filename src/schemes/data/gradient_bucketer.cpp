#include "src/schemes/data/gradient_bucketer.h"

#include <algorithm>
#include <stdexcept>

namespace mlps {

GradientBucketer::GradientBucketer(const std::vector<int64_t>& tensor_counts,
                                   const std::vector<int>& gradient_order,
                                   int64_t first_bucket_elements, int64_t bucket_elements,
                                   int pad_multiple)
    : tensors_(tensor_counts.size()), pad_multiple_(pad_multiple) {
  if (gradient_order.size() != tensor_counts.size())
    throw std::logic_error("GradientBucketer: gradient order must list every tensor once");
  int64_t offset = 0;
  int64_t filled = 0;  // unpadded elements in the open bucket
  auto close_bucket = [&] {
    GradientBucket& b = buckets_.back();
    b.count = (filled + pad_multiple - 1) / pad_multiple * pad_multiple;
    offset = b.offset + b.count;
    filled = 0;
  };
  for (int index : gradient_order) {
    const int64_t count = tensor_counts.at(index);
    // The open bucket is the first one until a second exists.
    const int64_t limit = buckets_.size() <= 1 ? first_bucket_elements : bucket_elements;
    if (buckets_.empty() || (filled > 0 && filled + count > limit)) {
      if (!buckets_.empty()) close_bucket();
      buckets_.push_back({offset, 0, 0, 0});
    }
    tensors_[index] = {buckets_.back().offset + filled, count,
                       static_cast<int>(buckets_.size()) - 1};
    filled += count;
    ++buckets_.back().tensors;
  }
  if (!buckets_.empty()) close_bucket();
  total_ = offset;
  int64_t shard_offset = 0;
  for (auto& b : buckets_) {
    b.shard_offset = shard_offset;
    shard_offset += b.count / pad_multiple;
  }
  reset();
}

void GradientBucketer::reset() {
  pending_.clear();
  for (const auto& b : buckets_) pending_.push_back(b.tensors);
}

std::vector<int> GradientBucketer::mark_ready(int index) {
  const int bucket = tensors_.at(index).bucket;
  if (--pending_[bucket] < 0) throw std::logic_error("GradientBucketer: gradient marked twice");
  if (pending_[bucket] > 0) return {};
  return {bucket};
}

GradientBucketer ddp_buckets(const std::vector<int64_t>& tensor_counts, double bucket_mb,
                             size_t element_bytes, int pad_multiple) {
  std::vector<int> order;
  for (size_t i = tensor_counts.size(); i-- > 0;) order.push_back(static_cast<int>(i));
  const double elements_per_mib = 1024.0 * 1024.0 / static_cast<double>(element_bytes);
  const auto bucket = std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * elements_per_mib));
  return GradientBucketer(tensor_counts, order,
                          std::min(bucket, static_cast<int64_t>(elements_per_mib)), bucket,
                          pad_multiple);
}

}  // namespace mlps
