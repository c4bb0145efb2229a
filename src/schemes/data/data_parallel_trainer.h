#pragma once
// Data parallelism with ZeRO 0-2 (docs/data-parallel.md): zero 0 all-reduces gradient
// buckets as backward produces them (after it with --no-overlap); zero 1 reduce-scatters them
// after backward, updates this rank's 1/N and all-gathers the parameters; zero 2 starts the
// reduce-scatters during backward and keeps a bucket's full gradients only until its
// reduce-scatter is done (at most two buckets in flight). T = bf16 or fp16 is typed 16-bit
// storage: 16-bit values (all-gathered as they are), fp32 gradients and fp32 buckets, so each
// reduction sees what the emulation's fp32 buffers hold.
#include "src/device/buffer_pool.h"
#include "src/schemes/data/data_parallel_base.h"
#include "src/schemes/data/gradient_bucketer.h"

namespace mlps {

template <typename T>
class DataParallelTrainer : public DataParallelBase<T> {
 public:
  DataParallelTrainer(const TrainerSetup& setup, const DataGrid& config);

  std::vector<NamedTensor> gather_parameters() override;

 private:
  void before_backward(int unit) override;
  void after_backward(int unit) override;
  void start_backward_pass() override { bucketer_->reset(); }
  void finish_gradient_sync() override;
  // DDP: its optimizer zeroes them; ZeRO-2: each step's bucket buffers start zeroed; ZeRO-1:
  // its optimizer holds a shard, so the whole gradient is overwritten.
  bool gradients_start_zero() const override {
    return sharded_gradients() || this->optimizer_.gradients_zeroed();
  }
  void after_optimizer_step() override;
  void launch_bucket(int bucket);
  void wait_all();
  // zero 2: waits for all but the newest `keep` reduce-scatters and frees their buckets.
  void retire_buckets(size_t keep);
  bool sharded_gradients() const { return this->config_.zero == 2; }
  // ZeRO-1 reduce-scatters after the whole backward pass, as --no-overlap does.
  bool overlapped() const { return this->config_.overlap && this->config_.zero != 1; }

  std::unique_ptr<GradientBucketer> bucketer_;
  // Flat, in gradient order, padded per bucket; zero >= 1: this rank's 1/N of every bucket.
  Buffer<T> values_, shard_values_;
  Buffer<Acc<T>> grads_, shard_grads_;
  std::vector<PendingComm> pending_;
  // zero 2: per bucket, held only while needed, from buffers the pool keeps between steps
  std::vector<Buffer<Acc<T>>> bucket_grads_;
  BufferPool<Acc<T>> bucket_pool_{this->device_};
  std::vector<int> in_flight_;           // zero 2: buckets whose reduce-scatter is pending
};

}  // namespace mlps
