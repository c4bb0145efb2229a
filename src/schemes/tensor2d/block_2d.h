#pragma once
// One FC_Net block on the q × q grid, on this rank's [rows × h_j] slice of the activations
// (h_j = part_size(H, q, j)):
// residual_mlp: y = x + fc2(ReLU(fc1(LayerNorm(x)))) with LayerNorm's statistics combined over
// the grid row and both Linears as SUMMA products; plain: y = ReLU(fc(x)). ReLU and the residual
// add are local (they act element by element on identically sliced blocks).
// What backward reads from forward besides x and y (Block2dActivations) is passed in by the
// caller, so that the blocks can share one set (activation checkpointing); the gradient scratch
// of a backward (Block2dScratch) is shared by all blocks always: it lives within one backward.
#include <memory>

#include "src/model_config.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor2d/summa_linear.h"

namespace mlps {

// A residual block's saved activations, [rows × h_j] and [rows × f_j] (f_j = part_size(F, q,
// j)); empty for --block plain, whose backward needs only x and y. LayerNorm's row statistics
// (2·rows values) stay in each block's SlicedLayerNorm.
template <typename T>
struct Block2dActivations {
  Block2dActivations(Device& device, const ModelConfig& config, int q, int column,
                     int64_t max_rows);
  Buffer<T> normed;  // LayerNorm output
  Buffer<T> inner;   // ReLU output
};

// ∂L/∂(LayerNorm output) [rows × h_j] (plain: ∂L/∂(fc output)) and ∂L/∂(ReLU output)
// [rows × f_j].
template <typename T>
struct Block2dScratch {
  Block2dScratch(Device& device, const ModelConfig& config, int q, int column, int64_t max_rows);
  Buffer<T> grad_normed, grad_inner;
};

template <typename T>
class Block2d {
 public:
  Block2d(Device& device, Grid2d& grid, SummaWorkspace<T>& workspace, Block2dScratch<T>& scratch,
          const ModelConfig& config, int64_t max_rows);
  // Points the block's layers at their shards in the flat buffers, by FcNet name (prefix
  // "block<l>").
  void bind(const ShardLayout& layout, const std::string& prefix, T* values, T* grads);

  // y = block(x), filling `saved`; x must stay untouched until backward. The same x and
  // parameters give bit-identical y and `saved` (the recompute of checkpointing relies on it).
  void forward(const T* x, T* y, int64_t rows, Block2dActivations<T>& saved);
  // dx from dy; parameter gradients as this rank's partial sums (see SummaLinear,
  // SlicedLayerNorm). `saved` (and LayerNorm's statistics) must be this x's forward's.
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows,
                const Block2dActivations<T>& saved);

 private:
  Device& device_;
  Block2dScratch<T>& scratch_;
  BlockKind kind_;
  int64_t local_hidden_;
  std::unique_ptr<SlicedLayerNorm<T>> norm_;  // residual_mlp only
  std::unique_ptr<SummaLinear<T>> fc1_;       // plain: the only Linear
  std::unique_ptr<SummaLinear<T>> fc2_;
};

}  // namespace mlps
