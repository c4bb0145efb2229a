#pragma once
// bin/tensor1d --sequence-parallel's layers (Megatron-LM sequence parallelism; docs/tensor1d.md).
// FcNet runs on a replica's R rows, but the H-wide activations between the Linears are held split
// by rows: tp rank p holds rows [p·R/T, (p+1)·R/T), so those widths are
// reported per replica row as H/T (the same R·H/T elements). LayerNorm and the residual add act
// on the local rows; the LayerNorm's output is all-gathered for the column-parallel fc1, and the
// row-parallel fc2's partial output is reduce-scattered back to rows. Every collective is the
// backward of another: a forward all-gather's backward is a reduce-scatter and vice versa.
// Parameters applied to the local rows only (γ, β, a replicated embed) get their gradients
// all-reduced over tp. One scratch of R × max(H, C) elements serves every layer in turn.
#include "src/comm/communicator.h"
#include "src/model/layers.h"
#include "src/model/parameter.h"
#include "src/schemes/tensor1d/sharded_linear.h"

namespace mlps {

template <typename T>
class SequenceParallelLayerNorm : public LayerNorm<T> {
 public:
  // grads: the tp communicator that sums γ's and β's gradients (the weight-gradient wire).
  SequenceParallelLayerNorm(Device& device, Parameter<T>& gamma, Parameter<T>& beta,
                            Communicator& tp, Communicator& grads, T* scratch)
      : device_(device), gamma_(gamma), beta_(beta), tp_(tp), grads_(grads), scratch_(scratch) {}
  int64_t in_width() const override { return features() / tp_.size(); }
  int64_t width() const override { return features(); }  // the output holds all R rows

  // x: the local rows; y [R × H]: this rank's rows normalised into its slot, then all-gathered.
  void forward(const T* x, T* y, Acc<T>* mean, Acc<T>* rstd, int64_t rows) override {
    T* slot = y + local(rows) * features() * tp_.rank();
    device_.layernorm_forward<T>(slot, mean, rstd, x, gamma_.value.data(), beta_.value.data(),
                                 local(rows), features(), 1e-5);
    tp_.all_gather<T>(slot, y, local(rows) * features());
  }
  // dy [R × H]: fc1's partial input gradients, summed and scattered to the local rows first.
  void backward(const T* x, const T* dy, T* dx, const Acc<T>* mean, const Acc<T>* rstd,
                int64_t rows, bool accumulate) override {
    tp_.reduce_scatter<T>(dy, scratch_, local(rows) * features());
    device_.layernorm_backward<T>(dx, gamma_.grad.data(), beta_.grad.data(), scratch_, x, mean,
                                  rstd, gamma_.value.data(), local(rows), features(), accumulate);
    grads_.all_reduce(gamma_.grad.data(), features());
    grads_.all_reduce(beta_.grad.data(), features());
  }

 private:
  int64_t features() const { return gamma_.cols; }
  int64_t local(int64_t rows) const { return rows / tp_.size(); }
  Device& device_;
  Parameter<T>& gamma_;
  Parameter<T>& beta_;
  Communicator& tp_;
  Communicator& grads_;
  T* scratch_;
};

// One Linear of the plan under sequence parallelism; what it communicates follows from where it
// sits (docs/tensor1d.md's table):
//   column fc1      input already gathered by its LayerNorm; partial dX left to it to scatter
//   row (fc2/embed) forward: partial output reduce-scattered to rows; backward: dY all-gathered
//   replicated embed  the local rows only; weight and bias gradients all-reduced
//   classifier      input rows all-gathered; column: partial dX reduce-scattered; replicated:
//                   dX of the local rows only
template <typename T>
class SequenceParallelLinear : public Linear<T> {
 public:
  SequenceParallelLinear(Device& device, const PlannedLinear& planned, bool classifier,
                         int tp_rank, Communicator& tp, Communicator& grads, T* scratch)
      : shard_(device, planned, tp_rank, tp.size()), classifier_(classifier), tp_(tp),
        grads_(grads), scratch_(scratch) {}

  // Storage as ShardedLinear::bind; the gradients are also kept for their all-reduce.
  void bind(T* weight, Acc<T>* weight_grad, T* bias, Acc<T>* bias_grad) {
    shard_.bind(weight, weight_grad, bias, bias_grad);
    weight_grad_ = weight_grad;
    bias_grad_ = bias_grad;
  }
  int64_t in_width() const override {
    return classifier_ ? shard_.local_in() / tp_.size() : shard_.local_in();
  }
  int64_t out_width() const override {
    if (classifier_ || shard_.split() == LinearSplit::column) return shard_.local_out();
    return shard_.out() / tp_.size();  // row-split output rows (a replicated embed's too)
  }

  void forward(const T* x, T* y, int64_t rows, bool /*backward_next*/) override {
    const int64_t in = shard_.local_in(), out = shard_.local_out(), r = rows / tp_.size();
    if (classifier_) {
      tp_.all_gather<T>(x, scratch_, r * in);
      shard_.multiply(scratch_, in, y, out, rows);
      shard_.add_bias(y, rows);
    } else if (shard_.split() == LinearSplit::column) {
      shard_.multiply(x, in, y, out, rows);
      shard_.add_bias(y, rows);
    } else if (shard_.split() == LinearSplit::row) {
      shard_.multiply(x, in, scratch_, out, rows);
      tp_.reduce_scatter<T>(scratch_, y, r * out);
      shard_.add_bias(y, r);
    } else {  // the replicated embed: its own rows of the whole input
      shard_.multiply(x + r * tp_.rank() * in, in, y, out, r);
      shard_.add_bias(y, r);
    }
  }

  // Gradients are overwritten, or added into those the last update zeroed (accumulate).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) override {
    const int64_t in = shard_.local_in(), out = shard_.local_out(), r = rows / tp_.size();
    if (classifier_) {
      // dW from the gathered input still in the scratch (nothing ran in between), then dX.
      weight_and_bias(scratch_, dy, rows, accumulate);
      if (shard_.split() == LinearSplit::column) {
        shard_.input_grad(dy, out, scratch_, in, rows);
        tp_.reduce_scatter<T>(scratch_, dx, r * in);
      } else {
        shard_.input_grad(dy + r * tp_.rank() * out, out, dx, in, r);
      }
    } else if (shard_.split() == LinearSplit::column) {
      weight_and_bias(x, dy, rows, accumulate);
      shard_.input_grad(dy, out, dx, in, rows);
    } else if (shard_.split() == LinearSplit::row) {
      tp_.all_gather<T>(dy, scratch_, r * out);
      weight_and_bias(x, scratch_, rows, accumulate);
      if (dx) shard_.input_grad(scratch_, out, dx, in, rows);
    } else {  // the replicated embed (its dX is never wanted): partial sums, then all-reduced
      shard_.weight_grad(x + r * tp_.rank() * in, in, dy, out, r, accumulate);
      shard_.bias_grad(dy, r, accumulate);
      grads_.all_reduce(weight_grad_, in * out);
      grads_.all_reduce(bias_grad_, out);
    }
  }

 private:
  void weight_and_bias(const T* x, const T* dy, int64_t rows, bool accumulate) {
    shard_.weight_grad(x, shard_.local_in(), dy, shard_.local_out(), rows, accumulate);
    shard_.bias_grad(dy, rows, accumulate);
  }
  ShardedLinear<T> shard_;
  bool classifier_;
  Communicator& tp_;
  Communicator& grads_;
  T* scratch_;
  Acc<T>* weight_grad_ = nullptr;
  Acc<T>* bias_grad_ = nullptr;
};

}  // namespace mlps
