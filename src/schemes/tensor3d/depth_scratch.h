#pragma once
// The full weight blocks a depth group all-gathers and the full dW blocks it reduce-scatters
// (G_d > 1 only), shared by the layers since they live only while a layer computes; sizes per
// overlap flag are docs/tensor3d.md's and docs/memory.md's. Consecutive layers take alternate
// buffers, so a buffer is rewritten only after the layer before last is done with it; on the GPU
// every
// collective's launch is ordered after the kernels already queued, so no extra synchronisation
// is needed. Checkpointing keeps the rule: a block's recompute gathers fc1 then fc2 after the
// next block's backward is done, and fc2 keeps its block for its backward, which runs next.
#include <cstdint>
#include <vector>

#include "src/device/buffer.h"
#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

// Elements of gathered-W and dW scratch for these blocks (each layer's out_local·in_local,
// forward order); 0 when depth == 1. The program and the tests both use it.
struct ScratchElements {
  int64_t gathered = 0, weight_grads = 0;
  int64_t total() const { return gathered + weight_grads; }
};
ScratchElements depth_scratch_elements(const std::vector<int64_t>& blocks, int depth,
                                       const Overlap3d& overlap);

template <typename T>
class DepthScratch {
 public:
  // Allocates the buffers and hands layer l its gathered-W and dW buffers (use_scratch).
  DepthScratch(Device& device, const std::vector<Linear3d<T>*>& linears, int depth,
               const Overlap3d& overlap);
  int64_t bytes() const { return bytes_; }

 private:
  std::vector<Buffer<T>> gathered_;
  std::vector<Buffer<Acc<T>>> weight_grads_;  // fp32 beside typed 16-bit weights
  int64_t bytes_ = 0;
};

}  // namespace mlps
