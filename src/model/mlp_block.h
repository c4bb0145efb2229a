#pragma once
// One block of FC_Net on any scheme's layers (layers.h). residual_mlp:
// y = x + fc2(ReLU(fc1(LayerNorm(x)))); plain: y = ReLU(fc(x)). ReLU and the residual add act
// element by element on this rank's share, whatever the layers' split.
// What backward reads from forward besides x and y is a BlockActivations the caller passes in
// (one per block, one shared by all blocks with activation checkpointing, or one per micro-batch
// in a pipeline stage); the backward's gradient scratch (BlockScratch) lives within one backward
// and is shared by all blocks.
#include <memory>
#include <vector>

#include "src/device/buffer.h"
#include "src/model/deferred_weight_grads.h"
#include "src/model/layers.h"
#include "src/model/model_config.h"

namespace mlps {

template <typename T>
struct BlockActivations {
  Buffer<T> normed;      // LayerNorm output [rows × norm width]
  Buffer<Acc<T>> mean, rstd;  // LayerNorm statistics [rows]
  Buffer<T> inner;       // ReLU output [rows × fc1 width]
  size_t bytes() const { return normed.bytes() + mean.bytes() + rstd.bytes() + inner.bytes(); }
};

template <typename T>
struct BlockScratch {
  Buffer<T> grad_normed;  // ∂L/∂LayerNorm output (plain: ∂L/∂fc output)
  Buffer<T> grad_inner;   // ∂L/∂ReLU output
  size_t bytes() const { return grad_normed.bytes() + grad_inner.bytes(); }
};

template <typename T>
class MlpBlock {
 public:
  // Makes the block's layers from `layers` under the name "block<l>".
  MlpBlock(Device& device, LayerSet<T>& layers, const std::string& name, const ModelConfig& config);

  BlockActivations<T> make_activations(int64_t rows) const;  // empty for plain blocks
  // Per row: the widths of ∂normed and ∂inner in this block's backward.
  int64_t grad_normed_width() const { return norm_ ? norm_->width() : fc1_->out_width(); }
  int64_t grad_inner_width() const { return norm_ ? fc1_->out_width() : 0; }
  int64_t in_width() const { return norm_ ? norm_->in_width() : fc1_->in_width(); }
  int64_t out_width() const { return (fc2_ ? fc2_ : fc1_)->out_width(); }

  // y = block(x), filling `saved`; x must stay untouched until backward. The same x and
  // parameters give bit-identical y and `saved` (checkpointing's recompute relies on it), which
  // then passes backward_next to the last Linear.
  void forward(const T* x, T* y, int64_t rows, BlockActivations<T>& saved,
               bool backward_next = false);
  // dx from dy; parameter gradients as the layers make them. `saved` is this x's forward's.
  // With `deferred` the Linears' dW and db are left there (saved_reused: `saved` is refilled
  // before they run, so their inputs are copied).
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows, bool accumulate,
                const BlockActivations<T>& saved, BlockScratch<T>& scratch,
                DeferredWeightGrads<T>* deferred = nullptr, bool saved_reused = false);

 private:
  Device& device_;
  std::unique_ptr<LayerNorm<T>> norm_;  // residual_mlp only
  std::unique_ptr<Linear<T>> fc1_;      // plain: the only Linear
  std::unique_ptr<Linear<T>> fc2_;
};

// One scratch that fits the backward of every block (plain blocks' widths alternate in
// tensor1d's column/row pairs).
template <typename T>
BlockScratch<T> make_block_scratch(Device& device, const std::vector<MlpBlock<T>*>& blocks,
                                   int64_t rows);

}  // namespace mlps
