#pragma once
// The tutorial's FC_Net, written once for every scheme: embed Linear(S² → H), L blocks,
// classifier Linear(H → 10), softmax cross-entropy averaged over the global batch. The layers
// come from the scheme's LayerSet (serial, Megatron column/row, SUMMA, 3D), each on this rank's
// share of the activations. A net runs all units, or a pipeline stage's contiguous run of them.
// What a pass keeps from its forward for its backward is a NetActivations: the whole net holds
// one (sized for max_rows rows); a pipeline stage makes one per micro-batch in flight.
// With config.checkpoint_activations a pass keeps no block internals: the net owns one shared
// set, refilled by rerunning each block's forward (its collectives included) right before its
// backward, timed as Phase::recompute; the same kernels on the same inputs give bit-identical
// values. A stage ending in the classifier does not keep its last block's output either: it is
// recomputed, into one buffer the stage owns, before the classifier's backward.
#include <memory>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/model/logit_split.h"
#include "src/model/mlp_block.h"
#include "src/timing/phase_timer.h"

namespace mlps {

// One pass's state over the net's units, from its forward to the end of its backward.
template <typename T>
struct NetActivations {
  Buffer<T> input;  // [rows × S²] images on the first unit, else the previous stage's output
  // per unit: its output; the classifier's is the whole logits [rows × 10]. (Checkpointing
  // stage: none for the last block before the classifier.)
  std::vector<Buffer<T>> outputs;
  std::vector<BlockActivations<T>> saved;  // per unit: a block's internals (not checkpointed)
  Buffer<int32_t> labels;  // with the classifier: [rows]
  Buffer<Acc<T>> probs;    // with the classifier: softmax [rows × 10] (fp32 for 16-bit T)
  Buffer<T> output_grad;   // without it: ∂L/∂output, from the next stage
  size_t bytes() const;
};

// What a forward-only pass needs besides its input and output: the blocks' internals,
// overwritten block after block, and two buffers the units' outputs ping-pong through.
template <typename T>
struct ForwardScratch {
  BlockActivations<T> block;
  Buffer<T> ping, pong;
  size_t bytes() const { return block.bytes() + ping.bytes() + pong.bytes(); }
};

// A pipeline stage's units [first, end) of FcNet's 0 embed, 1..L blocks, L+1 classifier.
struct StageUnits {
  int first = 0, end = 0;
};

template <typename T>
class FcNet {
 public:
  // The whole net. Makes the layers from `layers` in FC_Net's order. input_first: the first of
  // the S² input features this rank's embed reads (it reads embed in_width() of them).
  FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
        LogitSplit logits = {}, int64_t input_first = 0);
  // A pipeline stage: makes every unit's layers (their parameters' identities) but runs only
  // `units`, on activations made per micro-batch of at most max_rows rows.
  FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
        StageUnits units);

  // Whole net: queues the upload of this rank's features and the labels of `batch` (through
  // pinned staging), the forward pass and the download of each row's loss, none of which the
  // host waits for: a training step reads loss_sum() after its end. padded_rows: runs that
  // many rows, the batch's followed by zero rows (of label 0) whose loss is not counted, for
  // layers that split the rows evenly (an evaluation's short last batch; never trained on).
  void queue_forward(const HostBatch& batch, int64_t padded_rows = 0);
  // Σ over the counted rows of the last queued forward's loss (the caller divides by the
  // global batch); waits for the device.
  double loss_sum();
  // Both at once: queue_forward, then loss_sum.
  double forward(const HostBatch& batch, int64_t padded_rows = 0);
  // The same from host inputs: [rows × embed in_width()] of this rank's features; the loss of
  // the first `counted` rows (all when negative).
  double forward(const T* host_inputs, const int32_t* host_labels, int64_t rows,
                 int64_t counted = -1);
  // Whole net: backward of the mean loss over global_batch samples (this call's rows are part
  // of it). Gradients are added when accumulate, else overwritten.
  void backward(int64_t rows, int64_t global_batch, bool accumulate);
  // Whole net: the predicted class per row of the last forward pass.
  std::vector<int32_t> predictions(int64_t rows) const { return predictions(own_, rows); }

  // One pass's buffers for `rows` rows (through the device, so peak memory counts them).
  NetActivations<T> make_activations(int64_t rows) const;
  // Runs the units on a.input (with the classifier: softmax cross-entropy against a.labels,
  // each row's loss to row_loss[rows]). The output is output(a).
  void forward(NetActivations<T>& a, int64_t rows, Acc<T>* row_loss);
  const T* output(const NetActivations<T>& a) const { return a.outputs.back().data(); }
  // Backward of one pass: from the loss (a mean over global_batch samples) with the classifier,
  // else from a.output_grad; ∂L/∂input to input_grad (null: not wanted). With checkpointing it
  // rewrites output(a) with the same values (a stage's send of it must be complete).
  // With `deferred` (serial layers only) this is B: the Linears' dW and db are left there for
  // W (DeferredWeightGrads::run); LayerNorm's dγ, dβ are made here.
  void backward(NetActivations<T>& a, int64_t rows, int64_t global_batch, bool accumulate,
                T* input_grad, DeferredWeightGrads<T>* deferred = nullptr);
  std::vector<int32_t> predictions(const NetActivations<T>& a, int64_t rows) const;
  // Forward only (inference; no logit split): x [rows × input_features()] → y [rows ×
  // output_features()], with forward()'s kernels, keeping nothing.
  ForwardScratch<T> make_forward_scratch(int64_t rows) const;
  void forward_only(const T* x, T* y, int64_t rows, ForwardScratch<T>& scratch);

  bool is_first() const { return first_ == 0; }
  bool is_last() const { return first_ + static_cast<int>(units_.size()) == unit_count(); }
  bool checkpointed() const { return config_.checkpoint_activations; }
  int64_t input_features() const;   // of this net's first unit
  int64_t output_features() const;  // of its last (the classes with the classifier)
  // Checkpointing's shared recompute set and a stage's kept-back classifier input; 0 without.
  size_t recompute_bytes() const { return recompute_.bytes() + recompute_output_.bytes(); }

  // Units in forward order: 0 embed, 1..L the blocks, L+1 the classifier.
  int unit_count() const { return static_cast<int>(blocks_.size()) + 2; }
  void set_hooks(UnitHooks* hooks) { hooks_ = hooks; }
  // Where activation checkpointing's recompute is timed (null: untimed).
  void set_timer(PhaseTimer* timer) { timer_ = timer; }
  const ModelConfig& config() const { return config_; }
  int64_t max_rows() const { return max_rows_; }

 private:
  struct Unit {
    Linear<T>* linear = nullptr;  // embed or classifier
    MlpBlock<T>* block = nullptr;
    int64_t in_width = 0, out_width = 0;  // the classifier's out: the whole logits
  };
  FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
        LogitSplit logits, int64_t input_first, StageUnits units, bool stage);
  template <typename Pass>
  void run_unit(size_t unit, bool backward, Pass pass);
  BlockActivations<T>& saved(NetActivations<T>& a, size_t unit) {
    return config_.checkpoint_activations ? recompute_ : a.saved[unit];
  }
  bool shares_output(size_t unit) const {
    return recompute_output_.size() > 0 && unit + 2 == units_.size();
  }
  T* output_of(NetActivations<T>& a, size_t unit) {
    return shares_output(unit) ? recompute_output_.data() : a.outputs[unit].data();
  }
  void forward_unit(NetActivations<T>& a, size_t unit, const T* x, int64_t rows);
  // Reruns block `unit`'s forward (timed as recompute) into the shared set and its output.
  void recompute(NetActivations<T>& a, size_t unit, int64_t rows, bool backward_next);
  const T* local_grad_logits(int64_t rows);
  // Uploads the staged inputs and labels of `rows` rows, runs forward, and queues the download
  // of the first `counted` rows' losses.
  void queue_staged(int64_t rows, int64_t counted);

  Device& device_;
  ModelConfig config_;
  int64_t max_rows_, input_first_;
  LogitSplit split_;
  int first_ = 0;  // the first unit this net runs
  std::unique_ptr<Linear<T>> embed_;
  std::vector<std::unique_ptr<MlpBlock<T>>> blocks_;
  std::unique_ptr<Linear<T>> classifier_;
  std::vector<Unit> units_;  // the units this net runs, in forward order
  UnitHooks* hooks_ = nullptr;
  PhaseTimer* timer_ = nullptr;
  // Whole net only: pinned staging of a pass's inputs, labels and row losses ([max_rows]).
  HostBuffer<T> staged_inputs_;
  HostBuffer<int32_t> staged_labels_;
  HostBuffer<Acc<T>> host_losses_;
  int64_t counted_rows_ = 0;  // of the last queued forward
  NetActivations<T> own_;    // whole net only
  Buffer<Acc<T>> row_loss_;  // whole net only: [rows]
  BlockScratch<T> scratch_;
  Buffer<T> grad_a_, grad_b_;  // ping-pong ∂L/∂activation, the widest unit's rows
  Buffer<T> grad_logits_;      // with the classifier: [rows × C], whole on every rank
  BlockActivations<T> recompute_;  // checkpointing: the one set of block internals
  Buffer<T> recompute_output_;     // checkpointing stage: the classifier's input
  Buffer<T> local_logits_, gathered_logits_, local_grad_logits_;  // split logits only
};

}  // namespace mlps
