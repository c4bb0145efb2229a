#pragma once
// FC_Net on the AxoNN 3D grid (one replica's share of it). Every rank of an inner × outer plane
// holds the same samples (its depth and replica's rows of the global batch); activations are
// feature-sharded over inner or outer (the pixels over outer; each Linear flips the axis, so
// the embed is transposed, fc1 normal, fc2 transposed, ... and residuals and LayerNorm keep
// it: at [G,1,1] fc1 is Megatron's column-parallel Linear and fc2 its row-parallel one).
// LayerNorm statistics are reduced over the axis that shards its input (SlicedLayerNorm).
// The classifier's logit blocks are all-gathered over its output axis so every rank computes
// the same loss and keeps its block of ∂L/∂logits.
// Parameters live in two flat buffers in FC_Net's tensor order: weight shards (1/(G_r·G_c·G_d)
// of each W) and vector slices (biases, γ, β: 1/G of their features, replicated over the other
// plane axis, depth and data). After backward, vector gradients are all-reduced over depth,
// then every gradient over data. With G_d > 1 the Linears share their gathered-W and dW
// scratch (DepthScratch), so a rank holds its shards plus about one layer's full block.
// A residual block's backward reads LayerNorm's row statistics, the normalised input and fc1's
// activated output (Saved): each block keeps its own, or with config.checkpoint_activations
// the blocks keep only their inputs (the activations between blocks) and share one Saved,
// refilled by rerunning the block's forward (the same kernels and collectives on the same
// inputs: bit-identical) right before its backward. The backward's gradient scratch is shared
// by the blocks either way.
#include <memory>
#include <string>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/grid_3d.h"
#include "src/schemes/tensor3d/linear_3d.h"
#include "src/timing/phase_timer.h"

namespace mlps {

// Where one of FC_Net's tensors lives on this rank.
struct LocalTensor {
  std::string name;
  int64_t tensor_id = 0, rows = 0, cols = 0;  // global shape
  bool weight = false;   // a weight shard (else a vector slice)
  int64_t offset = 0;    // in the weight or the vector buffer
  int64_t count = 0;     // local elements
  // weights: the block's origin and width and the shard's first flattened block element;
  // vectors: col0 is the first global feature.
  int64_t row0 = 0, col0 = 0, block_cols = 0, first = 0;
  // Elements past the tensor's end (the classifier's padding) are zero and not gathered.
  bool owner = false;    // this rank contributes the tensor's elements to gather_parameters
};

template <typename T>
class Tensor3dNet {
 public:
  Tensor3dNet(Device& device, Grid3d& grid, const ModelConfig& config, int64_t max_rows,
              uint64_t seed, const Overlap3d& overlap);

  // This plane's samples (all S² features of each); returns Σ of their losses.
  double forward(const HostBatch& batch);
  // Backward of the mean loss over global_batch samples; on return every gradient is complete.
  // The checkpointing recompute is timed as Phase::recompute on timer (null: untimed).
  void backward(int64_t rows, int64_t global_batch, PhaseTimer* timer);
  std::vector<int32_t> predictions(int64_t rows) const;

  const std::vector<LocalTensor>& tensors() const { return tensors_; }
  int64_t weights_size() const { return weight_count_; }
  int64_t vectors_size() const { return vector_count_; }
  Buffer<T>& weights() { return weights_; }
  Buffer<T>& weight_grads() { return weight_grads_; }
  Buffer<T>& vectors() { return vectors_; }
  Buffer<T>& vector_grads() { return vector_grads_; }
  int64_t scratch_bytes() const { return scratch_ ? scratch_->bytes() : 0; }

 private:
  struct Saved {
    std::unique_ptr<SlicedLayerNorm<T>> norm;  // holds the row statistics
    Buffer<T> normed, inner;
  };
  struct Block {
    std::unique_ptr<Linear3d<T>> fc1, fc2;  // plain: fc1 only
    int64_t gamma = 0, beta = 0;            // residual: LayerNorm's offsets in vectors_
    Saved saved;                            // residual without checkpointing
  };
  std::unique_ptr<Linear3d<T>> make_linear(const std::string& name, ShardAxis& axis,
                                           int64_t in, int64_t out);
  int64_t add_vector(const std::string& name, int64_t features, Communicator& group);
  Saved make_saved(const Block& b, int64_t max_rows);
  // The block's Saved, its LayerNorm bound to the block's γ and β.
  Saved& saved_of(Block& b);
  // recompute: checkpointing's rerun, right before the block's backward.
  void forward_block(size_t l, int64_t rows, bool recompute);
  void backward_block(size_t l, const T* dy, T* dx, int64_t rows);
  void linear_backward(Linear3d<T>& layer, const T* x, const T* dy, T* dx, int64_t rows);

  Device& device_;
  Grid3d& grid_;
  ModelConfig config_;
  Overlap3d overlap_;
  std::vector<LocalTensor> tensors_;
  int64_t weight_count_ = 0, vector_count_ = 0;
  std::vector<Linear3d<T>*> linears_;  // forward order
  std::unique_ptr<Linear3d<T>> embed_, classifier_;
  std::vector<Block> blocks_;
  std::vector<ShardAxis> axes_;        // of activations_[l]
  ShardAxis logits_axis_ = ShardAxis::inner;
  Buffer<T> weights_, weight_grads_, vectors_, vector_grads_;
  Buffer<T> inputs_;
  Buffer<int32_t> labels_;
  std::vector<Buffer<T>> activations_;  // the embed's and each block's output
  Saved shared_;                        // checkpointing: every block's, one at a time
  Buffer<T> grad_normed_, grad_inner_;  // one block's backward at a time
  Buffer<T> local_logits_, gathered_logits_, logits_, probs_, row_loss_, grad_logits_,
      local_grad_logits_, grad_a_, grad_b_;
  std::vector<T> staged_inputs_;
  std::unique_ptr<DepthScratch<T>> scratch_;
  Linear3d<T>* deferred_ = nullptr;  // its dW reduce-scatter is still in flight
};

}  // namespace mlps
