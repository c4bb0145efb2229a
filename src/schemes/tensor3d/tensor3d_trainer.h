#pragma once
// bin/tensor3d's scheme: AxoNN 3D tensor parallelism on a G_r × G_c × G_d grid × D data-parallel
// replicas (docs/tensor3d.md), the ProcessGrid (data, depth, outer, inner)
// with communicators "inner", "outer", "depth" and "data", each ranked by its own coordinate. Replica p, depth d trains on part p·G_d + d of
// the global batch's D·G_d parts; every rank of its inner × outer plane loads them. FcNet runs
// on this trainer's layer set (Linear3d, SlicedLayerNorm): activations are feature-sharded over
// inner or outer, each Linear flipping the axis (the pixels are over outer). Parameters live in
// two flat buffers in FC_Net's tensor order: weight shards and vector slices (biases, γ, β,
// replicated over the other plane axis, depth and data). After backward, vector gradients are
// all-reduced over depth, then every gradient over data. With G_d > 1 the Linears share their
// gathered-W and dW scratch (DepthScratch).
#include <memory>
#include <string>
#include <vector>

#include "src/grid/process_grid.h"
#include "src/model/fc_net.h"
#include "src/schemes/named_tensors.h"
#include "src/schemes/scheme_trainer.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/tensor3d_grid.h"
#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

// Where one of FC_Net's tensors lives on this rank: its run (offset in the weight or the vector
// buffer; a vector slice is features col0.. of row 0). Elements past the tensor's end (the
// classifier's padding) are zero and not gathered.
struct LocalTensor : HeldRun {
  bool weight = false;  // a weight shard (else a vector slice)
};

template <typename T>
class Tensor3dTrainer : public ForwardBackwardTrainer<T>, private LayerSet<T> {
 public:
  // Throws InputError (before allocating anything) when the grid does not divide the model.
  // Collective over world.
  Tensor3dTrainer(const TrainerSetup& setup, const Tensor3dGrid& shape, const Overlap3d& overlap);

  std::string scheme() const override { return "tensor3d"; }
  std::string grid() const override { return shape_.describe(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::vector<NamedTensor> gather_parameters() override;
  std::string comm_backend() const override { return inner_->backend(); }

  // Bytes of this rank's weight shards and vector slices.
  int64_t weight_bytes() const { return weight_count_ * int64_t{sizeof(T)}; }
  int64_t vector_bytes() const { return vector_count_ * int64_t{sizeof(T)}; }
  // Bytes of the gathered-W and dW scratch the Linears share (0 at G_d = 1).
  int64_t scratch_bytes() const { return scratch_ ? scratch_->bytes() : 0; }

 private:
  void forward(const HostBatch& rows) override;
  double loss_sum() override { return net_->loss_sum(); }
  // Backward of the mean loss; on return every gradient is complete.
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<int32_t> predictions(int64_t rows) const override { return net_->predictions(rows); }
  MPI_Comm metrics_comm() const override { return grid_.world(); }
  // Every rank of a plane holds the same samples: (r, c) = (0, 0) speaks for them.
  bool speaker() const override { return r_ == 0 && c_ == 0; }

  // The layer set: each Linear flips the activations' axis; a LayerNorm reduces over the axis
  // that shards its input. Both record their tensors (bound once all are laid out).
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  void add_vector(const std::string& name, int64_t features, Communicator& group);
  LogitSplit logits();
  // Every tensor's initial values, this rank's elements only; then binds the layers to them.
  void initialise(uint64_t seed);

  Communicator& axis(ShardAxis a) { return a == ShardAxis::inner ? *inner_ : *outer_; }

  Tensor3dGrid shape_;
  ProcessGrid grid_;
  int r_, c_, d_, replica_;
  std::unique_ptr<Communicator> inner_, outer_, depth_, data_;
  ModelConfig model_;
  int64_t max_rows_;
  Overlap3d overlap_;
  ShardAxis axis_ = ShardAxis::outer;  // of the activations the next layer made reads
  std::vector<LocalTensor> tensors_;
  int64_t weight_count_ = 0, vector_count_ = 0;
  std::vector<Linear3d<T>*> linears_;  // forward order
  std::vector<std::pair<SlicedLayerNorm<T>*, size_t>> norms_;  // and γ's index in tensors_
  Buffer<T> weights_, vectors_;
  Buffer<Acc<T>> weight_grads_, vector_grads_;  // fp32 beside typed 16-bit values
  // The initial values at the accumulator's width, from initialise() until the optimizer's
  // master has started from them.
  std::vector<Acc<T>> initial_weights_, initial_vectors_;
  std::unique_ptr<DepthScratch<T>> scratch_;
  std::unique_ptr<FcNet<T>> net_;
};

}  // namespace mlps
