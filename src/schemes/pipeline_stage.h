#pragma once
// The layers of one pipeline stage: a contiguous run of FcNet's units (see PipelinePartition)
// with storage for their parameters and gradients, and no activations of its own. Everything a
// micro-batch's backward pass needs from its forward pass lives in a StageActivations that the
// caller makes per micro-batch (through the device, so peak memory counts it) and frees when
// that micro-batch's backward is done: a GPipe stage holds M of them, a 1F1B stage P − s.
#include <memory>
#include <string>
#include <vector>

#include "src/model/mlp_block.h"

namespace mlps {

// One micro-batch's state on a stage, from its input's arrival to the end of its backward.
template <typename T>
struct StageActivations {
  Buffer<T> input;  // [rows × S²] images on the first stage, else the previous stage's output
  std::vector<Buffer<T>> outputs;  // per unit: [rows × H]; the classifier's logits [rows × 10]
  std::vector<BlockActivations<T>> saved;  // per unit: what a block's backward needs
  Buffer<int32_t> labels;  // last stage: [rows]
  Buffer<T> probs;         // last stage: softmax [rows × 10]
  Buffer<T> output_grad;   // other stages: ∂L/∂output [rows × H], from the next stage
  size_t bytes() const;
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
  int64_t input_features() const;   // S² on the first stage, else H
  int64_t output_features() const;  // H (the classes on the last stage)

  StageActivations<T> make_activations(int64_t rows) const;
  // Runs the units on a.input (and, on the last stage, softmax cross-entropy against a.labels,
  // writing each row's loss to row_loss[rows]). The stage's output is output(a).
  void forward(StageActivations<T>& a, int64_t rows, T* row_loss);
  const T* output(const StageActivations<T>& a) const { return a.outputs.back().data(); }
  // Backward of one micro-batch: from the loss (a mean over global_batch samples) on the last
  // stage, else from a.output_grad. Writes ∂L/∂input to input_grad [rows × H] (not on the first
  // stage, which passes null). Parameter gradients are added when accumulate, else overwritten.
  void backward(StageActivations<T>& a, int64_t rows, int64_t global_batch, bool accumulate,
                T* input_grad);
  // Last stage: the predicted class of each row of a forward pass.
  std::vector<int32_t> predictions(const StageActivations<T>& a, int64_t rows) const;

  // Every FcNet parameter in FcNet's order; only this stage's have storage.
  const ParameterList<T>& parameters() const { return params_; }
  // This stage's parameters and gradients, flat in tensor order.
  T* values() { return values_.data(); }
  T* grads() { return grads_.data(); }
  int64_t parameter_elements() const { return values_.size(); }

 private:
  struct Unit {
    LinearLayer<T>* linear = nullptr;  // embed or classifier
    MlpBlock<T>* block = nullptr;
    int64_t out_features = 0;
  };
  Device& device_;
  ModelConfig config_;
  int first_unit_, end_unit_;
  ParameterList<T> params_;
  std::unique_ptr<LinearLayer<T>> embed_, classifier_;
  std::vector<std::unique_ptr<MlpBlock<T>>> blocks_;
  std::vector<Unit> units_;  // this stage's, in forward order
  Buffer<T> values_, grads_;
  Buffer<T> grad_a_, grad_b_;  // backward scratch: ∂L/∂(a unit's output) [rows × H]
  Buffer<T> grad_logits_;      // last stage [rows × 10]
};

}  // namespace mlps
