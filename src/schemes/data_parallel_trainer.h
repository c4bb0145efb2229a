#pragma once
// Data parallelism: every rank holds the model and trains on its rows of the global batch.
//   zero 0 (DDP): gradients all-reduced bucket by bucket, each bucket as soon as the backward
//          pass has produced it (overlapping the rest of backward), or after backward with
//          --no-overlap; every rank then takes the same optimizer step.
//   zero 1: optimizer state sharded: after backward each bucket is reduce-scattered, each rank
//          updates its 1/N of every bucket, and the updated parameters are all-gathered.
//   zero 2: as zero 1, with the reduce-scatters started during backward as buckets complete,
//          and gradients sharded too: a bucket's full gradients exist only from the backward of
//          its first tensor until its reduce-scatter is done (at most two buckets in flight).
// The loss is a mean over the global batch, so summed gradients are exactly serial's.
#include "src/schemes/data_parallel_base.h"
#include "src/schemes/gradient_bucketer.h"

namespace mlps {

template <typename T>
class DataParallelTrainer : public DataParallelBase<T> {
 public:
  DataParallelTrainer(const TrainerSetup& setup, const DataParallelConfig& config);

  std::vector<NamedTensor> gather_parameters() override;

  const GradientBucketer& bucketer() const { return *bucketer_; }

 private:
  void before_backward(int unit, const typename LayerObserver<T>::Params& params) override;
  void after_backward(int unit, const typename LayerObserver<T>::Params& params) override;
  void start_backward_pass() override;
  void finish_gradient_sync() override;
  void after_optimizer_step() override;
  void launch_bucket(int bucket);
  void wait_all();
  // zero 2: waits for all but the newest `keep` reduce-scatters and frees their buckets.
  void retire_buckets(size_t keep);
  bool sharded_gradients() const { return this->config_.zero == 2; }
  // ZeRO-1 reduce-scatters after the whole backward pass, as --no-overlap does.
  bool overlapped() const { return this->config_.overlap && this->config_.zero != 1; }

  std::unique_ptr<GradientBucketer> bucketer_;
  Buffer<T> values_, grads_;              // flat, in gradient order, padded per bucket
  Buffer<T> shard_values_, shard_grads_;  // zero >= 1: this rank's 1/N of every bucket
  std::vector<PendingComm> pending_;
  std::vector<Buffer<T>> bucket_grads_;  // zero 2: per bucket, allocated only while needed
  std::vector<int> in_flight_;           // zero 2: buckets whose reduce-scatter is pending
};

}  // namespace mlps
