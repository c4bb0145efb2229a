#pragma once
// FC_Net on a q × q grid (one replica): FcNet on this net's layer set (SummaLinear,
// SlicedLayerNorm) and the parameter shards of ShardLayout. Rank (i, j) holds its grid row's
// samples, feature part j of every activation. The classifier's logit blocks are all-gathered
// over "row" (padded to c_0 columns), so a grid row's ranks compute the same loss.
// Gradients: weight blocks are complete after their reduce-scatters; the vector slices (biases,
// γ, β) hold this rank's rows' sums and are all-reduced over "col" unit by unit as backward
// finishes each; with replicas, each unit's whole range is then all-reduced over "data".
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
