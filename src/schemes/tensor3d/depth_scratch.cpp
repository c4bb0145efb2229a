#include "src/schemes/tensor3d/depth_scratch.h"

#include <algorithm>
#include <numeric>

namespace mlps {

ScratchElements depth_scratch_elements(const std::vector<int64_t>& blocks, int depth,
                                       const Overlap3d& overlap) {
  if (depth == 1 || blocks.empty()) return {};
  const int64_t largest = *std::max_element(blocks.begin(), blocks.end());
  ScratchElements s;
  s.gathered = overlap.cache_weights
                   ? std::accumulate(blocks.begin(), blocks.end(), int64_t{0})
                   : largest * (overlap.prefetch_weights ? 2 : 1);
  s.weight_grads = largest * (overlap.defer_dw_reduce ? 2 : 1);
  return s;
}

template <typename T>
DepthScratch<T>::DepthScratch(Device& device, const std::vector<Linear3d<T>*>& linears,
                              int depth, const Overlap3d& overlap) {
  if (depth == 1) return;
  std::vector<int64_t> blocks;
  for (const Linear3d<T>* l : linears) blocks.push_back(l->block_elements());
  const int64_t largest = *std::max_element(blocks.begin(), blocks.end());
  if (overlap.cache_weights) {
    for (int64_t b : blocks) gathered_.emplace_back(device, b);
  } else {
    gathered_.emplace_back(device, largest);
    if (overlap.prefetch_weights) gathered_.emplace_back(device, largest);
  }
  weight_grads_.emplace_back(device, largest);
  if (overlap.defer_dw_reduce) weight_grads_.emplace_back(device, largest);
  for (size_t l = 0; l < linears.size(); ++l)
    linears[l]->use_scratch(gathered_[overlap.cache_weights ? l : l % gathered_.size()].data(),
                            weight_grads_[l % weight_grads_.size()].data());
  for (const Buffer<T>& b : gathered_) bytes_ += static_cast<int64_t>(b.bytes());
  for (const Buffer<Acc<T>>& b : weight_grads_) bytes_ += static_cast<int64_t>(b.bytes());
}

template class DepthScratch<float>;
template class DepthScratch<double>;
template class DepthScratch<bf16>;
template class DepthScratch<fp16>;

}  // namespace mlps
