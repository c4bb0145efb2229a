#pragma once
// FC_Net split over the tensor-parallel group of one data replica (Tensor1dPlan): forward and
// backward of every unit with its tensor-parallel communication. Activations between units are
// full and replicated on every tp rank ([rows × H]), except between the two blocks of a plain
// column/row pair, where each rank keeps only its [rows × H/T] slice.
//   Residual block: LayerNorm and the residual on the full activation (γ, β replicated: their
//   gradients come from the full dX and full input, identical on every tp rank, so they need no
//   reduction) → fc1 column → ReLU on the local slice → fc2 row, output all-reduced → + bias.
//   Backward: fc2 needs no communication (its dY is replicated); fc1's partial dX is all-reduced
//   asynchronously while the dW GEMM runs.
// The tensor parameters live in the caller's storage (bind()), so the trainer can lay them out
// flat for the optimizer and the data-parallel gradient all-reduce.
// With model.checkpoint_activations a block keeps only its input (the activation between units)
// and its output; its LayerNorm output and statistics and its [rows × F/T] ReLU slice go to one
// set shared by all blocks, refilled by rerunning the block's forward (LayerNorm, fc1 column,
// ReLU, fc2 row and its all-reduce) right before its backward, timed as Phase::recompute. The
// same kernels and the same all-reduce on the same inputs: bit-identical results, one more
// [rows × H] all-reduce per block whose forward has one (residual blocks, plain row blocks).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/buffer.h"
#include "src/comm/communicator.h"
#include "src/schemes/tensor1d/sharded_linear.h"
#include "src/timing/phase_timer.h"

namespace mlps {

template <typename T>
struct ShardPointers {
  T* value = nullptr;
  T* grad = nullptr;
};

template <typename T>
class Tensor1dModel {
 public:
  // tp: the tensor-parallel communicator (null when the plan has T = 1).
  Tensor1dModel(Device& device, const Tensor1dPlan& plan, int tp_rank, Communicator* tp,
                int64_t max_rows);

  // Points every shard at storage for the parameter of that name (FcNet's names).
  void bind(const std::function<ShardPointers<T>(const std::string&)>& storage);
  // Uploads this replica's rows and runs forward; returns Σ_rows loss (the same on every tp rank).
  double forward(const T* host_inputs, const int32_t* host_labels, int64_t rows);
  // Backward of the mean loss over global_batch samples. unit_done(u) is called as soon as unit
  // u's parameter gradients are complete (units: 0 embed, 1..L blocks, L+1 classifier).
  void backward(int64_t rows, int64_t global_batch, const std::function<void(int)>& unit_done);
  std::vector<int32_t> predictions(int64_t rows) const;
  // Where activation checkpointing's recompute is timed (null: untimed).
  void set_timer(PhaseTimer* timer) { timer_ = timer; }

 private:
  // What a residual block's backward needs from its forward besides x.
  struct Saved {
    Buffer<T> normed, mean, rstd;  // LayerNorm output [rows × H] and statistics [rows]
    Buffer<T> inner;               // ReLU output slice [rows × F/T]
  };
  struct Block {
    std::unique_ptr<ShardedLinear<T>> fc1, fc2;  // plain: fc1 is the block's only Linear
    ShardPointers<T> gamma, beta;                // residual only
    Saved saved;                                 // residual without checkpointing
  };
  Saved make_saved(const Block& b, int64_t rows);
  Saved& saved_of(Block& b) { return checkpoint_ ? shared_ : b.saved; }
  void forward_embed(int64_t rows);
  void forward_block(Block& b, const T* x, T* y, int64_t rows);
  void forward_classifier(const T* x, int64_t rows);
  void backward_block(Block& b, const T* x, const T* y, const T* dy, T* dx, int64_t rows);
  void backward_classifier(const T* x, T* dx, int64_t rows);
  void backward_embed(const T* dy, int64_t rows);
  // The forward all-reduce of a row-parallel output (blocking: the next op needs it).
  void all_reduce(T* data, int64_t count);
  // The backward all-reduce of a column-parallel dX, overlapped with weight_and_bias().
  template <typename Grads>
  void all_reduce_overlapping(T* dx, int64_t count, Grads weight_and_bias);

  Device& device_;
  Tensor1dPlan plan_;
  Communicator* tp_;
  int64_t hidden_, classes_, inputs_width_;
  std::unique_ptr<ShardedLinear<T>> embed_, classifier_;
  std::vector<Block> blocks_;
  bool checkpoint_ = false;
  Saved shared_;  // checkpointing: every block's, one block at a time
  PhaseTimer* timer_ = nullptr;
  Buffer<T> inputs_;
  Buffer<int32_t> labels_;
  std::vector<Buffer<T>> activations_;  // L + 1 of [rows × H]
  Buffer<T> grad_inner_;                // [rows × F/T] scratch (one block at a time)
  Buffer<T> grad_a_, grad_b_, grad_scratch_;  // [rows × H]
  Buffer<T> logits_, probs_, row_loss_, grad_logits_;
  Buffer<T> local_logits_, gathered_logits_, identity_, bias_scratch_;  // column classifier
};

}  // namespace mlps
