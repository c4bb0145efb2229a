#pragma once
// The tutorial's FC_Net on one device: embed Linear(S² → H), L blocks, classifier Linear(H → 10),
// softmax cross-entropy averaged over the global batch. Activations are sized for max_rows.
// With config.checkpoint_activations a block's saved activations are not kept from forward to
// backward: the block's forward is rerun (bit-identically) right before its backward.
#include <memory>
#include <vector>

#include "src/model/layer_observer.h"
#include "src/model/mlp_block.h"
#include "src/timing/phase_timer.h"

namespace mlps {

template <typename T>
class FcNet {
 public:
  FcNet(Device& device, const ModelConfig& config, int64_t max_rows,
        ParameterStorage storage = ParameterStorage::owned);

  // Uploads inputs [rows × S²] and labels and runs the forward pass; returns Σ_rows loss
  // (the caller divides by the global batch).
  double forward(const T* host_inputs, const int32_t* host_labels, int64_t rows);
  // Backward of the mean loss over global_batch samples (this call's rows are part of it).
  void backward(int64_t rows, int64_t global_batch, bool accumulate);
  // Predicted class per row of the last forward pass.
  std::vector<int32_t> predictions(int64_t rows) const;

  ParameterList<T>& parameters() { return params_; }
  // Units in forward order: 0 embed, 1..L the blocks, L+1 the classifier.
  int unit_count() const { return static_cast<int>(units_.size()); }
  const std::vector<Parameter<T>*>& unit_parameters(int unit) const { return units_[unit]; }
  // Hooks around each unit's forward and backward (null: none).
  void set_observer(LayerObserver<T>* observer) { observer_ = observer; }
  // Where activation checkpointing's recompute is timed (null: untimed).
  void set_timer(PhaseTimer* timer) { timer_ = timer; }
  const ModelConfig& config() const { return config_; }
  int64_t max_rows() const { return max_rows_; }

 private:
  Device& device_;
  ModelConfig config_;
  int64_t max_rows_;
  ParameterList<T> params_;
  std::unique_ptr<LinearLayer<T>> embed_;
  std::vector<std::unique_ptr<MlpBlock<T>>> blocks_;
  std::unique_ptr<LinearLayer<T>> classifier_;
  Buffer<T> inputs_;                  // [rows × S²]
  Buffer<int32_t> labels_;            // [rows]
  std::vector<Buffer<T>> activations_;  // L + 1 of [rows × H]: embed output, each block's output
  // With checkpoint_activations the blocks keep no activations of their own: this one set is
  // filled by each block's forward and refilled by its recompute just before its backward.
  BlockActivations<T> shared_block_activations_;
  PhaseTimer* timer_ = nullptr;
  Buffer<T> logits_, probs_, row_loss_, grad_logits_;
  Buffer<T> grad_a_, grad_b_;         // ping-pong ∂L/∂activation [rows × H]
  std::vector<std::vector<Parameter<T>*>> units_;
  LayerObserver<T>* observer_ = nullptr;
  void close_unit(size_t first_param);
  void forward_block(size_t l, int64_t rows);  // into the block's own or the shared activations  // the parameters added since first_param form a unit
  template <typename Pass>
  void observed(int unit, bool backward, Pass pass);
};

}  // namespace mlps
