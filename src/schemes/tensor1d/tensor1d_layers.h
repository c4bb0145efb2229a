#pragma once
// bin/tensor1d's layers for FC_Net (Megatron-LM, Tensor1dPlan; README, Tensor parallelism in
// 1D): every Linear is a ShardedLinear with its tensor-parallel communication; LayerNorm is
// replicated (its γ, β gradients come from replicated inputs, so they need no reduction).
// Column-parallel: backward's partial dX is all-reduced over tp while the dW GEMM runs.
// Row-parallel: forward's partial output is all-reduced, then the replicated bias added once.
// The parameters live in the trainer's flat storage, found by FC_Net's names.
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
