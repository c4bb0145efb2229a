#pragma once
// The tutorial's FC_Net, written once for every scheme: embed Linear(S² → H), L blocks,
// classifier Linear(H → 10), softmax cross-entropy averaged over the global batch. The layers
// come from the scheme's LayerSet (serial, Megatron column/row, SUMMA, 3D), each on this rank's
// share of the activations; the net owns the activations between units (sized by the layers'
// widths for max_rows rows), activation checkpointing, the loss and the unit hooks.
// With config.checkpoint_activations the blocks keep only their inputs from forward to
// backward: they share one BlockActivations, refilled by rerunning each block's forward (its
// collectives included) right before its backward, timed as Phase::recompute; the same kernels
// on the same inputs give bit-identical values.
#include <memory>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/model/logit_split.h"
#include "src/model/mlp_block.h"
#include "src/timing/phase_timer.h"

namespace mlps {

template <typename T>
class FcNet {
 public:
  // Makes the layers from `layers` in FC_Net's order. input_first: the first of the S² input
  // features this rank's embed reads (it reads embed in_width() of them).
  FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
        LogitSplit logits = {}, int64_t input_first = 0);

  // Uploads this rank's features and the labels of `batch` and runs the forward pass; returns
  // Σ_rows loss (the caller divides by the global batch).
  double forward(const HostBatch& batch);
  // The same from inputs already staged: [rows × embed in_width()] of this rank's features.
  double forward(const T* host_inputs, const int32_t* host_labels, int64_t rows);
  // Backward of the mean loss over global_batch samples (this call's rows are part of it).
  void backward(int64_t rows, int64_t global_batch, bool accumulate);
  // Predicted class per row of the last forward pass.
  std::vector<int32_t> predictions(int64_t rows) const;

  // Units in forward order: 0 embed, 1..L the blocks, L+1 the classifier.
  int unit_count() const { return static_cast<int>(blocks_.size()) + 2; }
  void set_hooks(UnitHooks* hooks) { hooks_ = hooks; }
  // Where activation checkpointing's recompute is timed (null: untimed).
  void set_timer(PhaseTimer* timer) { timer_ = timer; }
  const ModelConfig& config() const { return config_; }
  int64_t max_rows() const { return max_rows_; }

 private:
  template <typename Pass>
  void run_unit(int unit, bool backward, Pass pass);
  BlockActivations<T>& saved(size_t block) { return saved_[saved_.size() == 1 ? 0 : block]; }
  void forward_block(size_t block, int64_t rows, bool backward_next);
  const T* local_grad_logits(int64_t rows);

  Device& device_;
  ModelConfig config_;
  int64_t max_rows_, input_first_;
  LogitSplit split_;
  std::unique_ptr<Linear<T>> embed_;
  std::vector<std::unique_ptr<MlpBlock<T>>> blocks_;
  std::unique_ptr<Linear<T>> classifier_;
  UnitHooks* hooks_ = nullptr;
  PhaseTimer* timer_ = nullptr;
  std::vector<T> staged_inputs_;
  Buffer<T> inputs_;                    // [rows × embed in_width]
  Buffer<int32_t> labels_;              // [rows]
  std::vector<Buffer<T>> activations_;  // L + 1: the embed's and each block's output
  std::vector<BlockActivations<T>> saved_;  // per block; one shared with checkpointing
  BlockScratch<T> scratch_;
  Buffer<T> grad_a_, grad_b_;           // ping-pong ∂L/∂activation, the widest unit's rows
  Buffer<T> logits_, probs_, row_loss_, grad_logits_;  // [rows × C]: whole on every rank
  Buffer<T> local_logits_, gathered_logits_, local_grad_logits_;  // split logits only
};

}  // namespace mlps
