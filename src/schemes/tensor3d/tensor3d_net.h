#pragma once
// FC_Net on the AxoNN 3D grid (one replica's share; README, AxoNN 3D tensor parallelism): FcNet
// on this net's layer set (Linear3d, SlicedLayerNorm). A plane's ranks hold the same samples;
// activations are feature-sharded over inner or outer, each Linear flipping the axis (the
// pixels are over outer). Parameters live in two flat buffers in FC_Net's tensor order: weight
// shards and vector slices (biases, γ, β, replicated over the other plane axis, depth and
// data). After backward, vector gradients are all-reduced over depth, then every gradient over
// data. With G_d > 1 the Linears share their gathered-W and dW scratch (DepthScratch).
#include <memory>
#include <string>
#include <vector>

#include "src/model/fc_net.h"
#include "src/schemes/named_tensors.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/grid_3d.h"
#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

// Where one of FC_Net's tensors lives on this rank: its run (offset in the weight or the vector
// buffer; a vector slice is features col0.. of row 0). Elements past the tensor's end (the
// classifier's padding) are zero and not gathered.
struct LocalTensor : HeldRun {
  int64_t tensor_id = 0;
  bool weight = false;  // a weight shard (else a vector slice)
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
  void add_vector(const std::string& name, int64_t features, Communicator& group);
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
