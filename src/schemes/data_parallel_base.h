#pragma once
// What every data-parallel scheme shares: ranks train on rows [r·G/N, (r+1)·G/N) of the global
// batch, on their own copy (or shard) of the model, and combine losses and accuracy counts.
#include <mpi.h>

#include <memory>

#include "src/comm/make_communicator.h"
#include "src/model/serial_net.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

struct DataParallelConfig {
  int zero = 0;
  double bucket_mb = 25;
  bool overlap = true;
};

// InputError unless each of `ranks` data-parallel ranks gets at least one row.
void check_batch_covers_ranks(int64_t global_batch, int ranks);

template <typename T>
class DataParallelBase : public ForwardBackwardTrainer<T>, protected UnitHooks {
 public:
  std::string scheme() const override { return "data"; }
  std::string grid() const override;
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::string comm_backend() const override { return comm_->backend(); }

 protected:
  // Throws InputError when the batch leaves a rank without samples.
  DataParallelBase(const TrainerSetup& setup, const DataParallelConfig& config);
  // The scheme's steps around the local backward pass: before it, and after it (all gradient
  // communication complete when this returns); the optimizer's update has its own hook.
  virtual void start_backward_pass() {}
  virtual void finish_gradient_sync() = 0;
  double forward(const HostBatch& rows) override { return model_.forward(rows); }
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<int32_t> predictions(int64_t rows) const override {
    return model_.predictions(rows);
  }
  MPI_Comm metrics_comm() const override { return metrics_comm_; }
  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::optimizer_;
  using Params = std::vector<Parameter<T>*>;
  const Params& unit_parameters(int unit) const { return model_.unit_parameters(unit); }

  DataParallelConfig config_;
  MPI_Comm metrics_comm_;
  std::unique_ptr<Communicator> comm_;
  SerialNet<T> model_;
};

}  // namespace mlps
