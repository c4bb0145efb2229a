#pragma once
// FC_Net on a q × q grid (one replica), every dimension split by balanced_split.h's rule.
// Rank (i, j) holds the activations of its grid row's samples and feature part j of every
// layer: [rows × part j of S²] inputs, [rows × h_j] hidden activations, [rows × part j of F]
// inner activations; the parameter shards of ShardLayout. FC_Net (src/model/fc_net.h) runs on
// this net's layer set: every Linear is a SummaLinear, LayerNorm a SlicedLayerNorm. Softmax cross-entropy: the classifier's [rows × c_j] logit
// blocks (c_j = part_size(10, q, j)) are all-gathered over "row", padded to c_0 columns, so
// every rank of a grid row has its samples' full logits and computes the same loss and the
// same ∂L/∂logits, of which it keeps its own block of columns.
// Gradients: the weight blocks are complete after their reduce-scatters; the vector slices
// (biases, γ, β) hold this rank's rows' sums and are all-reduced down the grid column ("col")
// unit by unit as backward finishes each; with replicas, each unit's whole range is then
// all-reduced over "data". A 1 × 1 grid communicates only over "data".
// With config.checkpoint_activations each block's recompute repeats its LayerNorm all-gather
// and SUMMA broadcasts.
#include <memory>
#include <vector>

#include "src/model/fc_net.h"
#include "src/schemes/tensor2d/grid_2d.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/summa_linear.h"

namespace mlps {

template <typename T>
class Tensor2dNet : private LayerSet<T>, private UnitHooks {
 public:
  // Allocates this rank's shards and initialises them from `seed`; max_rows bounds the rows
  // of any batch passed to forward.
  Tensor2dNet(Device& device, Grid2d& grid, const ModelConfig& config, int64_t max_rows,
              uint64_t seed);

  // This grid row's samples (all S² features of each); returns Σ of their losses (the same on
  // the q ranks of the grid row).
  double forward(const HostBatch& batch) { return net_->forward(batch); }
  // Backward of the mean loss over global_batch samples; on return every gradient is complete.
  // Checkpointing's recompute is timed on `timer` (null: untimed).
  void backward(int64_t rows, int64_t global_batch, PhaseTimer* timer = nullptr);
  // Predicted class of each of the last forward pass's rows.
  std::vector<int32_t> predictions(int64_t rows) const { return net_->predictions(rows); }

  const ShardLayout& layout() const { return layout_; }
  const ModelConfig& config() const { return config_; }
  Buffer<T>& values() { return values_; }
  Buffer<T>& grads() { return grads_; }

 private:
  struct UnitSync {
    int unit;
    PendingComm vectors;  // the all-reduce over "col" of the unit's vector slices (q > 1)
  };
  // The layer set: SUMMA Linears and sliced LayerNorms bound to their shards by FC_Net's names.
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  LogitSplit logits();
  // A unit's backward is done: start summing its vectors down the column; with replicas, the
  // unit before it (whose reduce-scatters are now complete) goes to the "data" all-reduce.
  void after_backward(int unit) override;
  void sync_over_replicas(UnitSync& sync);
  void finish_gradients();

  Device& device_;
  Grid2d& grid_;
  ModelConfig config_;
  int64_t max_rows_;
  ShardLayout layout_;
  Buffer<T> values_, grads_;
  SummaWorkspace<T> workspace_;
  std::unique_ptr<FcNet<T>> net_;
  std::vector<UnitSync> syncing_;
  std::vector<PendingComm> replica_sums_;
};

}  // namespace mlps
