#pragma once
// Data parallelism: every rank holds the model and trains on its rows of the global batch.
//   zero 0 (DDP): gradients all-reduced bucket by bucket, each bucket as soon as the backward
//          pass has produced it (overlapping the rest of backward), or after backward with
//          --no-overlap; every rank then takes the same optimizer step.
//   zero 1: optimizer state sharded: after backward each bucket is reduce-scattered, each rank
//          updates its 1/N of every bucket, and the updated parameters are all-gathered.
//   zero 2: as zero 1, with the reduce-scatters started during backward as buckets complete.
// The loss is a mean over the global batch, so summed gradients are exactly serial's.
#include "src/schemes/data_parallel_base.h"
#include "src/schemes/gradient_bucketer.h"

namespace mlps {

template <typename T>
class DataParallelTrainer : public DataParallelBase<T> {
 public:
  DataParallelTrainer(DeviceKind device, const ModelConfig& model, const OptimizerConfig& optimizer,
                      uint64_t seed, int64_t global_batch, const DataParallelConfig& config,
                      CommBackend backend, MPI_Comm comm);

  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<NamedTensor> gather_parameters() override;

  const GradientBucketer& bucketer() const { return *bucketer_; }

 private:
  void after_backward(int unit, const typename LayerObserver<T>::Params& params) override;
  void launch_bucket(int bucket);
  void wait_all();

  std::unique_ptr<GradientBucketer> bucketer_;
  Buffer<T> values_, grads_;              // flat, in gradient order, padded per bucket
  Buffer<T> shard_values_, shard_grads_;  // zero >= 1: this rank's 1/N of every bucket
  std::vector<PendingComm> pending_;
};

}  // namespace mlps
