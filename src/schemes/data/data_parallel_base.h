#pragma once
// What every data-parallel scheme shares: ranks train on rows [r·B/N, (r+1)·B/N) of the global
// batch B, on their own copy (or shard) of the model, and combine losses and accuracy counts.
// The ranks form the ProcessGrid (data, shard): groups of G consecutive ranks share one copy of
// the sharded state, and the N/G groups replicate it (G = N but for ZeRO-3 with --shard-group).
#include <mpi.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "src/comm/make_communicator.h"
#include "src/schemes/data/data_grid.h"
#include "src/grid/process_grid.h"
#include "src/model/serial_net.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

template <typename T>
class DataParallelBase : public ForwardBackwardTrainer<T>, protected UnitHooks {
 public:
  std::string scheme() const override { return "data"; }
  std::string grid() const override;
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::string comm_backend() const override;
  // data_comm_bytes for this run: per training iteration, or with `inference` per forward pass.
  std::map<std::string, double> analytic_bytes(bool inference, CommCalls* calls = nullptr) const;

 protected:
  // Throws InputError when the batch leaves a rank without samples.
  DataParallelBase(const TrainerSetup& setup, const DataGrid& config);
  // The scheme's steps around the local backward pass: before it, and after it (all gradient
  // communication complete when this returns); the optimizer's update has its own hook.
  virtual void start_backward_pass() {}
  virtual void finish_gradient_sync() = 0;
  // True when every gradient the backward writes is zero before it (the optimizer zeroed them,
  // or they are fresh zeroed buffers), so that it adds into them instead of zeroing them again.
  virtual bool gradients_start_zero() const = 0;
  void forward(const HostBatch& rows) override { model_.queue_forward(rows); }
  double loss_sum() override { return model_.loss_sum(); }
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<int32_t> predictions(int64_t rows) const override {
    return model_.predictions(rows);
  }
  MPI_Comm metrics_comm() const override { return metrics_comm_; }
  // Runs `add`, which registers this rank's tensors with the optimizer, their state offloaded
  // to a scratch file when --offload says so. A rank that cannot make or fill its file (a full
  // disk) stops every rank with that rank's line, instead of leaving the others waiting.
  void add_to_optimizer(const std::function<void()>& add);
  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::optimizer_;
  using Params = std::vector<Parameter<T>*>;
  const Params& unit_parameters(int unit) const { return model_.unit_parameters(unit); }

  // This rank's coordinate in its group and G (1 without a group communicator).
  int shard_rank() const { return comm_ ? comm_->rank() : 0; }
  int shard_ranks() const { return comm_ ? comm_->size() : 1; }

  DataGrid config_;
  MPI_Comm metrics_comm_;
  ProcessGrid grid_;
  // Within the group (named "world" when it is all ranks; none when G = 1 < N): DDP's all-reduce,
  // ZeRO's reduce-scatters and all-gathers. Across the groups ("world" when G = 1, else "data";
  // none when G = N): the all-reduce of each reduce-scattered shard.
  std::unique_ptr<Communicator> comm_, replica_comm_;
  SerialNet<T> model_;
};

}  // namespace mlps
