#pragma once
// bin/tensor1d: Megatron-LM tensor parallelism over T ranks × D data-parallel replicas (rank
// layout, splits and volumes: docs/tensor1d.md). Communicators "tp" and "data".
// Each rank generates only its own shards of the initial weights into one flat buffer in FcNet's
// tensor order, which gradients and the optimizer state mirror. With D > 1 each unit's gradient
// range is all-reduced over "data" as soon as its backward is done, overlapping the rest.
// With plan.sequence_parallel the layers are sequence_parallel_layers.h's. T = bf16 or fp16 is
// typed 16-bit storage: 16-bit values and activations (their tp collectives carry them as they
// are), fp32 gradients and an fp32 master.
#include <mpi.h>

#include <map>
#include <memory>

#include "src/comm/make_communicator.h"
#include "src/grid/process_grid.h"
#include "src/schemes/scheme_trainer.h"
#include "src/model/fc_net.h"
#include "src/model/parameter_list.h"
#include "src/schemes/tensor1d/sharded_linear.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

template <typename T>
class Tensor1dTrainer : public ForwardBackwardTrainer<T>, private LayerSet<T>, private UnitHooks {
 public:
  // The world's size must be plan.tp × dp (the caller checks the grid); plan.model is the
  // setup's model.
  Tensor1dTrainer(const TrainerSetup& setup, const Tensor1dGrid& plan, int dp);
  ~Tensor1dTrainer() override;

  std::string scheme() const override { return "tensor1d"; }
  std::string grid() const override;
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::vector<NamedTensor> gather_parameters() override;
  std::string comm_backend() const override;

  // The analytic volumes (tensor1d_comm_bytes) for this rank's replica: per training step, or
  // with `inference` per evaluate() of a global batch; `calls`, where given, gets their calls.
  std::map<std::string, double> analytic_bytes(int64_t global_batch, bool inference = false,
                                               CommCalls* calls = nullptr) const;
  // After gather_parameters(): the largest spread between the copies of one parameter element
  // (a replicated tensor's on the tp ranks, LayerNorm γ/β, row-parallel and replicated layers'
  // biases ..., and every tensor's on the data replicas), and that tensor's name (empty while
  // all copies are identical). Copies get identical gradients, so this is exactly 0.
  double replica_divergence() const { return replica_divergence_; }
  const std::string& most_divergent_tensor() const { return most_divergent_tensor_; }

 private:
  // The layer set (Megatron-LM, Tensor1dGrid; sequence parallel: SequenceParallelLinear and
  // SequenceParallelLayerNorm): every Linear a ShardedLinear with its
  // tensor-parallel communication; LayerNorm replicated (its γ, β gradients come from
  // replicated inputs, so they need no reduction). Column-parallel: backward's partial dX is
  // all-reduced over tp while the dW GEMM runs. Row-parallel: forward's partial output is
  // all-reduced, then the replicated bias added once.
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  // The first input feature the embed reads, and how the classifier's logits are split.
  int64_t input_first() const;
  LogitSplit logits() const;
  // A unit's gradients are complete: with replicas, start their all-reduce over "data".
  void after_backward(int unit) override;
  // Sequence parallelism pads an evaluation's short last batch to rows the T ranks split.
  void forward(const HostBatch& rows) override {
    model_->queue_forward(rows, pass_rows(plan_, rows.rows));
  }
  double loss_sum() override { return model_->loss_sum(); }
  // Backward, then the wait for the replicas' gradient all-reduces.
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<int32_t> predictions(int64_t rows) const override {
    return model_->predictions(rows);
  }
  // Every tp rank of a replica holds the same rows and loss: the sum runs over "data" only.
  MPI_Comm metrics_comm() const override { return grid_.group("data"); }

  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::log_;
  using SchemeTrainer<T>::optimizer_;
  Tensor1dGrid plan_;
  ProcessGrid grid_;  // data, tensor; its MPI groups carry metrics and --verify gathers
  int tp_rank_ = 0, dp_rank_ = 0, dp_ = 1;
  ShardLayout layout_;  // this rank's block of every tensor in the flat buffers
  std::unique_ptr<Communicator> tp_comm_;    // null when T = 1
  std::unique_ptr<Communicator> data_comm_;  // null when D = 1
  // Sequence parallel only: γ's, β's and a replicated embed's gradient sums over tp (named
  // "tp", on the weight-gradient wire), and the layers' shared scratch [R × H].
  std::unique_ptr<Communicator> tp_grad_comm_;
  Buffer<T> sequence_scratch_;
  ParameterList<T> norms_{device_, ParameterStorage::external};  // γ, β as views of values_
  std::unique_ptr<FcNet<T>> model_;
  Buffer<T> values_;
  Buffer<Acc<T>> grads_;  // fp32 beside typed 16-bit values
  std::vector<PendingComm> pending_;
  double replica_divergence_ = 0;
  std::string most_divergent_tensor_;
};

}  // namespace mlps
