#pragma once
// bin/tensor1d's layers for FC_Net (Megatron-LM, Tensor1dPlan): every Linear is a
// ShardedLinear with its tensor-parallel communication, LayerNorm is replicated (γ, β identical
// on every tp rank: their gradients come from the full dX and the full input, identical on
// every tp rank, so they need no reduction). Activations between units are full ([rows × H]),
// except between the two blocks of a plain column/row pair, where each rank keeps only its
// [rows × H/T] slice.
//   column  forward y = x·W_shardᵀ + b_shard (the input is the full activation); backward dX is
//           a partial sum, all-reduced over tp while the dW GEMM runs;
//   row     forward the partial output is all-reduced, then the replicated bias added once;
//           backward needs no communication (dY is replicated);
//   replicated  the whole layer, no communication.
// The embed reads only its input features (FcNet's input window); a column-parallel
// classifier's logit blocks are all-gathered (tensor1d_logits). The parameters live in the
// trainer's flat storage, found by FC_Net's names.
// With checkpointing each block's recompute repeats its forward all-reduce: one more
// [rows × H] all-reduce per residual block or plain row block.
#include <functional>
#include <string>

#include "src/model/layers.h"
#include "src/model/logit_split.h"
#include "src/model/parameter_list.h"
#include "src/schemes/tensor1d/sharded_linear.h"

namespace mlps {

template <typename T>
struct ShardPointers {
  T* value = nullptr;
  T* grad = nullptr;
};

template <typename T>
class Tensor1dLayers : public LayerSet<T> {
 public:
  using Storage = std::function<ShardPointers<T>(const std::string& name)>;
  // tp: the tensor-parallel communicator (null when the plan has T = 1).
  Tensor1dLayers(Device& device, const Tensor1dPlan& plan, int tp_rank, Communicator* tp,
                 Storage storage);
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;

  // The first input feature the embed reads, and how the classifier's logits are split.
  int64_t input_first() const;
  LogitSplit logits() const;

 private:
  Device& device_;
  const Tensor1dPlan& plan_;
  int tp_rank_;
  Communicator* tp_;
  Storage storage_;
  ParameterList<T> norms_;  // γ, β as views of the storage
};

}  // namespace mlps
