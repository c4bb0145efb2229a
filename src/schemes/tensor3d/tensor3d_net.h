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
// FC_Net (src/model/fc_net.h) runs on this net's layer set: Linear3d and SlicedLayerNorm.
// With checkpointing each block's recompute repeats its collectives.
#include <memory>
#include <string>
#include <vector>

#include "src/model/fc_net.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/grid_3d.h"
#include "src/schemes/tensor3d/linear_3d.h"

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
class Tensor3dNet : private LayerSet<T> {
 public:
  Tensor3dNet(Device& device, Grid3d& grid, const ModelConfig& config, int64_t max_rows,
              uint64_t seed, const Overlap3d& overlap);

  // This plane's samples (all S² features of each); returns Σ of their losses.
  double forward(const HostBatch& batch);
  // Backward of the mean loss over global_batch samples; on return every gradient is complete.
  // The checkpointing recompute is timed as Phase::recompute on timer (null: untimed).
  void backward(int64_t rows, int64_t global_batch, PhaseTimer* timer);
  std::vector<int32_t> predictions(int64_t rows) const { return net_->predictions(rows); }

  const std::vector<LocalTensor>& tensors() const { return tensors_; }
  int64_t weights_size() const { return weight_count_; }
  int64_t vectors_size() const { return vector_count_; }
  Buffer<T>& weights() { return weights_; }
  Buffer<T>& weight_grads() { return weight_grads_; }
  Buffer<T>& vectors() { return vectors_; }
  Buffer<T>& vector_grads() { return vector_grads_; }
  int64_t scratch_bytes() const { return scratch_ ? scratch_->bytes() : 0; }

 private:
  // The layer set: each Linear flips the activations' axis; a LayerNorm reduces over the axis
  // that shards its input. Both record their tensors (bound once all are laid out).
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  int64_t add_vector(const std::string& name, int64_t features, Communicator& group);
  LogitSplit logits();
  // Every tensor's initial values, this rank's elements only; then binds the layers to them.
  void initialise(uint64_t seed);

  Device& device_;
  Grid3d& grid_;
  ModelConfig config_;
  int64_t max_rows_;
  Overlap3d overlap_;
  ShardAxis axis_ = ShardAxis::outer;  // of the activations the next layer made reads
  std::vector<LocalTensor> tensors_;
  int64_t weight_count_ = 0, vector_count_ = 0;
  std::vector<Linear3d<T>*> linears_;  // forward order
  std::vector<std::pair<SlicedLayerNorm<T>*, size_t>> norms_;  // and γ's index in tensors_
  Buffer<T> weights_, weight_grads_, vectors_, vector_grads_;
  std::unique_ptr<DepthScratch<T>> scratch_;
  std::unique_ptr<FcNet<T>> net_;
};

}  // namespace mlps
