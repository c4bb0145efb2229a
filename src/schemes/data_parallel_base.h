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

// Rows [r·G/N, (r+1)·G/N) of a global batch of G rows for rank r of N.
BatchSlice even_batch_slice(int64_t global_rows, int rank, int ranks);

template <typename T>
class DataParallelBase : public SchemeTrainer<T>, protected LayerObserver<T> {
 public:
  std::string scheme() const override { return "data"; }
  std::string grid() const override;
  BatchSlice batch_slice(int64_t global_rows) const override;
  // Forward, backward (gradient synchronisation overlapping it as the stage does), optimizer.
  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::string comm_backend() const override { return comm_->backend(); }

 protected:
  // Throws InputError when the batch leaves a rank without samples.
  DataParallelBase(const DeviceConfig& device, const ModelConfig& model, const OptimizerConfig& optimizer,
                   int64_t global_batch, const DataParallelConfig& config, CommBackend backend,
                   MPI_Comm comm);
  // The stage's steps around the shared ones: before the backward pass, after it (all gradient
  // communication complete when this returns) and after the optimizer's update.
  virtual void start_backward_pass() {}
  virtual void finish_gradient_sync() = 0;
  virtual void after_optimizer_step() {}
  // Local forward pass; returns this rank's summed loss.
  double forward(const HostBatch& rows);
  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::optimizer_;
  // Σ over ranks of a local value (metrics only: not counted as training communication).
  double sum_over_ranks(double local) const;

  DataParallelConfig config_;
  MPI_Comm metrics_comm_;
  std::unique_ptr<Communicator> comm_;
  SerialNet<T> model_;

 private:
};

}  // namespace mlps
