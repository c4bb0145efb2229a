#pragma once
// FC_Net on a q × q grid (one replica), every dimension split by balanced_split.h's rule.
// Rank (i, j) holds the activations of its grid row's samples and feature part j of every
// layer: [rows × part j of S²] inputs, [rows × h_j] hidden activations, [rows × part j of F]
// inner activations; the parameter shards of ShardLayout; every Linear is a SummaLinear,
// LayerNorm a SlicedLayerNorm. Softmax cross-entropy: the classifier's [rows × c_j] logit
// blocks (c_j = part_size(10, q, j)) are all-gathered over "row", padded to c_0 columns, so
// every rank of a grid row has its samples' full logits and computes the same loss and the
// same ∂L/∂logits, of which it keeps its own block of columns.
// Gradients: the weight blocks are complete after their reduce-scatters; the vector slices
// (biases, γ, β) hold this rank's rows' sums and are all-reduced down the grid column ("col")
// unit by unit as backward finishes each; with replicas, each unit's whole range is then
// all-reduced over "data". A 1 × 1 grid communicates only over "data".
// With config.checkpoint_activations the net keeps only the blocks' inputs (and the last
// block's output, the classifier's input) from forward to backward: the blocks share one set
// of saved activations, refilled by rerunning each block's forward (its LayerNorm all-gather
// and SUMMA broadcasts included) right before its backward, timed as Phase::recompute. The
// same kernels and collectives on the same inputs give bit-identical values.
#include <memory>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/schemes/tensor2d/block_2d.h"
#include "src/timing/phase_timer.h"

namespace mlps {

template <typename T>
class Tensor2dNet {
 public:
  // Allocates this rank's shards and initialises them from `seed`; max_rows bounds the rows
  // of any batch passed to forward.
  Tensor2dNet(Device& device, Grid2d& grid, const ModelConfig& config, int64_t max_rows,
              uint64_t seed);

  // This grid row's samples (all S² features of each); returns Σ of their losses (the same on
  // the q ranks of the grid row).
  double forward(const HostBatch& batch);
  // Backward of the mean loss over global_batch samples; on return every gradient is complete.
  // Checkpointing's recompute is timed on `timer` (null: untimed).
  void backward(int64_t rows, int64_t global_batch, PhaseTimer* timer = nullptr);
  // Predicted class of each of the last forward pass's rows.
  std::vector<int32_t> predictions(int64_t rows) const;

  const ShardLayout& layout() const { return layout_; }
  const ModelConfig& config() const { return config_; }
  Buffer<T>& values() { return values_; }
  Buffer<T>& grads() { return grads_; }

 private:
  struct UnitSync {
    int unit;
    PendingComm vectors;  // the all-reduce over "col" of the unit's vector slices (q > 1)
  };
  // A unit's backward is done: start summing its vectors down the column; with replicas, the
  // unit before it (whose reduce-scatters are now complete) goes to the "data" all-reduce.
  void unit_done(int unit);
  // Block l's forward from activations_[l] into activations_[l + 1] and its saved set.
  void forward_block(size_t l, int64_t rows);
  void sync_over_replicas(UnitSync& sync);
  void finish_gradients();

  Device& device_;
  Grid2d& grid_;
  ModelConfig config_;
  ShardLayout layout_;
  int64_t local_inputs_, local_hidden_, local_classes_;
  int64_t logit_block_;  // c_0: the all-gathered logit blocks' (padded) width
  Buffer<T> values_, grads_;
  SummaWorkspace<T> workspace_;
  Block2dScratch<T> block_scratch_;
  std::unique_ptr<SummaLinear<T>> embed_;
  std::vector<std::unique_ptr<Block2d<T>>> blocks_;
  std::unique_ptr<SummaLinear<T>> classifier_;
  Buffer<T> inputs_;
  Buffer<int32_t> labels_;
  // L + 1 of [rows × h_j]: the blocks' inputs and the last block's output.
  std::vector<Buffer<T>> activations_;
  // One per block; with checkpointing one shared by all (saved_for(l)).
  std::vector<Block2dActivations<T>> saved_;
  Block2dActivations<T>& saved_for(size_t l) { return saved_[saved_.size() == 1 ? 0 : l]; }
  Buffer<T> local_logits_, gathered_logits_, logits_, probs_, row_loss_, grad_logits_,
      local_grad_logits_;
  Buffer<T> grad_a_, grad_b_;
  std::vector<T> staged_inputs_;
  std::vector<UnitSync> syncing_;
  std::vector<PendingComm> replica_sums_;
};

}  // namespace mlps
