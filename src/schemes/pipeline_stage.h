#pragma once
// The layers of one pipeline stage: a contiguous run of FcNet's units (see PipelinePartition)
// with storage for their parameters and gradients, and no activations of its own. Everything a
// micro-batch's backward pass needs from its forward pass lives in a StageActivations that the
// caller makes per micro-batch (through the device, so peak memory counts it) and frees when
// that micro-batch's backward is done: a GPipe stage holds M of them, a 1F1B stage P − s.
// With config.checkpoint_activations a micro-batch keeps only every block's input and what the
// stage boundary needs (the stage's input; its output, being sent, or on the last stage the
// logits and softmax); the blocks' internals go to one set the stage owns, refilled by rerunning
// each block's forward (timed as Phase::recompute) right before its backward: the same kernels
// on the same inputs, so the results are bit-identical. The recompute rewrites a block's kept
// output with the same values (the caller must have completed the stage output's send), except
// that the last stage keeps no output of its last block: it recomputes it, into one shared
// buffer, before the classifier's backward, which reads it.
// Inference uses forward_only(), which keeps nothing for a backward pass at all.
#include <memory>
#include <string>
#include <vector>

#include "src/model/serial_net.h"
#include "src/timing/phase_timer.h"

namespace mlps {

// One micro-batch's state on a stage, from its input's arrival to the end of its backward.
template <typename T>
struct StageActivations {
  Buffer<T> input;  // [rows × S²] images on the first stage, else the previous stage's output
  // per unit: [rows × H]; the classifier's logits [rows × 10]. Checkpointing, last stage: none
  // for the last block (the classifier's input is recomputed).
  std::vector<Buffer<T>> outputs;
  std::vector<BlockActivations<T>> saved;  // per unit: what a block's backward needs (empty
                                           // with checkpointing: recomputed instead)
  Buffer<int32_t> labels;  // last stage: [rows]
  Buffer<T> probs;         // last stage: softmax [rows × 10]
  Buffer<T> output_grad;   // other stages: ∂L/∂output [rows × H], from the next stage
  size_t bytes() const;
};

// What a forward-only pass over up to `rows` rows needs besides its input and output: the
// blocks' internals, overwritten block after block, and two buffers the units' outputs
// ping-pong through between the stage's input and its output.
template <typename T>
struct ForwardScratch {
  BlockActivations<T> block;
  Buffer<T> ping, pong;  // [rows × H]
  size_t bytes() const { return block.bytes() + ping.bytes() + pong.bytes(); }
};

template <typename T>
class PipelineStage {
 public:
  // Builds every parameter of FcNet (names, tensor ids and shapes exactly FcNet's) but gives
  // storage only to those of units [first_unit, end_unit), initialised from `seed`, in one flat
  // value buffer and one flat gradient buffer in tensor order. micro_rows sizes the backward
  // scratch: no call may pass more rows.
  PipelineStage(Device& device, const ModelConfig& config, int first_unit, int end_unit,
                int64_t micro_rows, uint64_t seed);

  bool is_first() const { return first_unit_ == 0; }
  bool is_last() const { return end_unit_ == static_cast<int>(config_.layers) + 2; }
  bool checkpointed() const { return config_.checkpoint_activations; }
  int64_t input_features() const;   // S² on the first stage, else H
  int64_t output_features() const;  // H (the classes on the last stage)

  StageActivations<T> make_activations(int64_t rows) const;
  ForwardScratch<T> make_forward_scratch(int64_t rows) const;
  // Runs the units on a.input (and, on the last stage, softmax cross-entropy against a.labels,
  // writing each row's loss to row_loss[rows]). The stage's output is output(a).
  void forward(StageActivations<T>& a, int64_t rows, T* row_loss);
  const T* output(const StageActivations<T>& a) const { return a.outputs.back().data(); }
  // Backward of one micro-batch: from the loss (a mean over global_batch samples) on the last
  // stage, else from a.output_grad. Writes ∂L/∂input to input_grad [rows × H] (not on the first
  // stage, which passes null). Parameter gradients are added when accumulate, else overwritten.
  // With checkpointing it rewrites output(a) (the same values): its send must be complete.
  void backward(StageActivations<T>& a, int64_t rows, int64_t global_batch, bool accumulate,
                T* input_grad);
  // Forward only (inference): x [rows × input_features()] → y [rows × output_features()] (the
  // logits on the last stage), with the same kernels as forward(), keeping nothing.
  void forward_only(const T* x, T* y, int64_t rows, ForwardScratch<T>& scratch);
  // Where activation checkpointing's recompute is timed (null: untimed).
  void set_timer(PhaseTimer* timer) { timer_ = timer; }
  // Checkpointing's shared recompute set and (last stage) the last block's output; 0 without.
  size_t recompute_bytes() const { return recompute_.bytes() + recompute_output_.bytes(); }
  // Last stage: the predicted class of each row of a forward pass.
  std::vector<int32_t> predictions(const StageActivations<T>& a, int64_t rows) const;

  // Every FcNet parameter in FcNet's order; only this stage's have storage.
  ParameterList<T>& parameters() { return layers_.parameters(); }
  // This stage's parameters and gradients, flat in tensor order.
  T* values() { return values_.data(); }
  T* grads() { return grads_.data(); }
  int64_t parameter_elements() const { return values_.size(); }

 private:
  struct Unit {
    Linear<T>* linear = nullptr;  // embed or classifier
    MlpBlock<T>* block = nullptr;
    int64_t out_features = 0;
  };
  Device& device_;
  ModelConfig config_;
  int first_unit_, end_unit_;
  SerialLayers<T> layers_;  // every FcNet layer; only this stage's parameters have storage
  std::unique_ptr<Linear<T>> embed_, classifier_;
  std::vector<std::unique_ptr<MlpBlock<T>>> blocks_;
  std::vector<Unit> units_;  // this stage's, in forward order
  BlockScratch<T> block_scratch_;  // shared by this stage's blocks' backward
  Buffer<T> values_, grads_;
  Buffer<T> grad_a_, grad_b_;  // backward scratch: ∂L/∂(a unit's output) [rows × H]
  Buffer<T> grad_logits_;      // last stage [rows × 10]
  // Checkpointing: the blocks' internals of the forward in progress or of the recompute, and on
  // the last stage its last block's output (the classifier's input) [rows × H].
  BlockActivations<T> recompute_;
  Buffer<T> recompute_output_;
  PhaseTimer* timer_ = nullptr;
  // Checkpointing on the last stage: the unit whose output is not kept (its last block).
  bool shares_output(size_t unit) const {
    return recompute_output_.size() > 0 && unit + 2 == units_.size();
  }
  T* output_of(StageActivations<T>& a, size_t unit) {
    return shares_output(unit) ? recompute_output_.data() : a.outputs[unit].data();
  }
  // Reruns block `unit`'s forward (timed as recompute) into recompute_ and its output.
  void recompute(StageActivations<T>& a, size_t unit, int64_t rows);
};

}  // namespace mlps
