#pragma once
// Groups parameters into gradient buckets in the order the backward pass produces their
// gradients (PyTorch DDP's reverse order): the first bucket holds up to first_bucket_elements,
// later ones up to bucket_elements, a tensor larger than that gets a bucket of its own. Tensors
// are laid out contiguously in that order in one flat buffer, each bucket padded to a multiple
// of pad_multiple (the data-parallel degree when buckets are reduce-scattered), so a bucket is
// one contiguous collective.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlps {

struct BucketedTensor {
  int64_t offset = 0;  // in the flat buffer
  int64_t count = 0;
  int bucket = 0;
};

struct GradientBucket {
  int64_t offset = 0;        // first element in the flat buffer
  int64_t count = 0;         // elements including padding (a multiple of pad_multiple)
  int64_t shard_offset = 0;  // where one rank's 1/pad_multiple of it starts in a shard buffer
  int tensors = 0;
};

class GradientBucketer {
 public:
  // tensor_counts[i] is the element count of tensor i; gradient_order lists tensor indices in
  // the order their gradients become ready.
  GradientBucketer(const std::vector<int64_t>& tensor_counts,
                   const std::vector<int>& gradient_order, int64_t first_bucket_elements,
                   int64_t bucket_elements, int pad_multiple);

  const std::vector<GradientBucket>& buckets() const { return buckets_; }
  const BucketedTensor& tensor(int index) const { return tensors_[index]; }
  int64_t total_elements() const { return total_; }  // padded
  int64_t shard_elements() const { return total_ / pad_multiple_; }

  // Starts a new backward pass: no gradient is ready.
  void reset();
  // Tensor `index` has its gradient; returns the buckets this completed (in order).
  std::vector<int> mark_ready(int index);

 private:
  std::vector<BucketedTensor> tensors_;
  std::vector<GradientBucket> buckets_;
  std::vector<int> pending_;  // per bucket: tensors not yet ready
  int64_t total_ = 0;
  int pad_multiple_ = 1;
};

// DDP's buckets (ZeRO-1/2's, padded to pad_multiple) of tensors in creation order, whose
// gradients become ready in reverse: the first bucket 1 MiB as PyTorch's (or bucket_mb if
// smaller), the others bucket_mb, in elements of element_bytes.
GradientBucketer ddp_buckets(const std::vector<int64_t>& tensor_counts, double bucket_mb,
                             size_t element_bytes, int pad_multiple);

}  // namespace mlps
