#pragma once
// One FC_Net block on the q × q grid, on this rank's [rows × h_j] slice of the activations
// (h_j = part_size(H, q, j)):
// residual_mlp: y = x + fc2(ReLU(fc1(LayerNorm(x)))) with LayerNorm's statistics combined over
// the grid row and both Linears as SUMMA products; plain: y = ReLU(fc(x)). ReLU and the residual
// add are local (they act element by element on identically sliced blocks).
#include <memory>

#include "src/model_config.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor2d/summa_linear.h"

namespace mlps {

template <typename T>
class Block2d {
 public:
  Block2d(Device& device, Grid2d& grid, SummaWorkspace<T>& workspace, const ModelConfig& config,
          int64_t max_rows);
  // Points the block's layers at their shards in the flat buffers, by FcNet name (prefix
  // "block<l>").
  void bind(const ShardLayout& layout, const std::string& prefix, T* values, T* grads);

  // y = block(x); x must stay untouched until backward.
  void forward(const T* x, T* y, int64_t rows);
  // dx from dy; parameter gradients as this rank's partial sums (see SummaLinear, SlicedLayerNorm).
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows);

 private:
  Device& device_;
  BlockKind kind_;
  int64_t local_hidden_;
  std::unique_ptr<SlicedLayerNorm<T>> norm_;  // residual_mlp only
  std::unique_ptr<SummaLinear<T>> fc1_;       // plain: the only Linear
  std::unique_ptr<SummaLinear<T>> fc2_;
  Buffer<T> normed_, inner_, grad_inner_, grad_normed_;
};

}  // namespace mlps
