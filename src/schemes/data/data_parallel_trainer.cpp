#include "src/schemes/data/data_parallel_trainer.h"

#include <algorithm>
#include <vector>

#include "src/schemes/named_tensors.h"

namespace mlps {

template <typename T>
DataParallelTrainer<T>::DataParallelTrainer(const TrainerSetup& s, const DataGrid& config)
    : DataParallelBase<T>(s, config) {
  const int ranks = this->comm_->size();
  auto& params = this->model_.parameters();
  // Gradients become ready unit by unit from the classifier back to the embedding, all of a
  // unit's at once, so reverse creation order is the order they are ready in.
  std::vector<int64_t> counts;
  for (size_t i = 0; i < params.size(); ++i) counts.push_back(params[i].size());
  // Buckets of gradients, which stay fp32 beside typed 16-bit values.
  bucketer_ = std::make_unique<GradientBucketer>(
      ddp_buckets(counts, config.bucket_mb, sizeof(Acc<T>), config.zero >= 1 ? ranks : 1));

  Device& dev = this->device_;
  values_ = Buffer<T>(dev, bucketer_->total_elements());
  values_.zero();  // padding stays zero
  if (!sharded_gradients()) {
    grads_ = Buffer<Acc<T>>(dev, bucketer_->total_elements());
    grads_.zero();
  }
  bucket_grads_.resize(bucketer_->buckets().size());
  for (size_t i = 0; i < params.size(); ++i) {
    const BucketedTensor& t = bucketer_->tensor(static_cast<int>(i));
    params[i].value = Buffer<T>::view(dev, values_.data() + t.offset, t.count);
    if (!sharded_gradients())
      params[i].grad = Buffer<Acc<T>>::view(dev, grads_.data() + t.offset, t.count);
  }
  // Typed storage: the optimizer's fp32 master starts from the fp32 initial values (as the
  // emulation's does), at the flat positions the optimizer holds (zeros in the padding): the
  // whole model under ZeRO-0, the rank's piece of each bucket under ZeRO-1/2.
  struct Held {
    int64_t first, count, at;  // flat [first, first + count) goes to master[at, ...)
  };
  std::vector<Held> held{{0, bucketer_->total_elements(), 0}};
  if (config.zero >= 1) {
    held.clear();
    for (const auto& b : bucketer_->buckets())
      held.push_back({b.offset + this->comm_->rank() * (b.count / ranks), b.count / ranks,
                      b.shard_offset});
  }
  const int64_t master_size =
      config.zero == 0 ? bucketer_->total_elements() : bucketer_->shard_elements();
  std::vector<Acc<T>> master(is_16bit_v<T> ? static_cast<size_t>(master_size) : 0, Acc<T>(0));
  params.initialise(s.seed, [&](const Parameter<T>& p, const std::vector<Acc<T>>& wide) {
    if (master.empty()) return;
    const BucketedTensor& t = bucketer_->tensor(static_cast<int>(p.tensor_id));
    for (const Held& h : held) {
      const int64_t lo = std::max(h.first, t.offset);
      const int64_t hi = std::min(h.first + h.count, t.offset + t.count);
      if (lo < hi)
        std::copy(wide.begin() + (lo - t.offset), wide.begin() + (hi - t.offset),
                  master.begin() + h.at + (lo - h.first));
    }
  });
  if (config.zero == 0) {
    this->add_to_optimizer([&] {
      this->optimizer_.add(values_.data(), grads_.data(), bucketer_->total_elements(),
                           master.empty() ? nullptr : master.data());
    });
    this->optimizer_.zero_gradients_after_step();  // it holds every gradient: all are zeroed
    return;
  }
  const int64_t shard = bucketer_->shard_elements();
  shard_values_ = Buffer<T>(dev, shard);
  shard_grads_ = Buffer<Acc<T>>(dev, shard);
  shard_grads_.zero();
  for (const auto& b : bucketer_->buckets()) {
    const int64_t piece = b.count / ranks, from = b.offset + this->comm_->rank() * piece;
    dev.copy(shard_values_.data() + b.shard_offset, values_.data() + from, piece * sizeof(T));
  }
  // Emulated mixed precision: the optimizer rounds its shard (keeping the fp32 master); the
  // first forward pass computes with the whole model rounded the same way.
  if constexpr (!is_16bit_v<T>) dev.round_to_storage(values_.data(), bucketer_->total_elements());
  this->add_to_optimizer([&] {
    this->optimizer_.add(shard_values_.data(), shard_grads_.data(), shard,
                         master.empty() ? nullptr : master.data());
  });
}

template <typename T>
void DataParallelTrainer<T>::launch_bucket(int bucket) {
  const GradientBucket& b = bucketer_->buckets()[bucket];
  Acc<T>* grads =
      sharded_gradients() ? bucket_grads_[bucket].data() : grads_.data() + b.offset;
  if (sharded_gradients()) in_flight_.push_back(bucket);
  constexpr DataType type = data_type_of<Acc<T>>();
  if (this->config_.zero == 0)
    pending_.push_back(this->comm_->all_reduce_async(grads, grads, b.count, type));
  else
    pending_.push_back(this->comm_->reduce_scatter_async(
        grads, shard_grads_.data() + b.shard_offset, b.count / this->comm_->size(), type));
}

template <typename T>
void DataParallelTrainer<T>::wait_all() {
  for (auto& p : pending_) p->wait();
  pending_.clear();
  for (int bucket : in_flight_) bucket_pool_.give(std::move(bucket_grads_[bucket]));
  in_flight_.clear();
}

template <typename T>
void DataParallelTrainer<T>::retire_buckets(size_t keep) {
  while (in_flight_.size() > keep) {
    pending_.front()->wait();
    pending_.erase(pending_.begin());
    bucket_pool_.give(std::move(bucket_grads_[in_flight_.front()]));
    in_flight_.erase(in_flight_.begin());
  }
}

template <typename T>
void DataParallelTrainer<T>::before_backward(int unit) {
  this->comm_->progress();  // advance the buckets in flight between units of computation
  if (!sharded_gradients()) return;
  for (Parameter<T>* p : this->unit_parameters(unit)) {
    const BucketedTensor& t = bucketer_->tensor(static_cast<int>(p->tensor_id));
    const GradientBucket& b = bucketer_->buckets()[t.bucket];
    Buffer<Acc<T>>& storage = bucket_grads_[t.bucket];
    if (storage.size() == 0) {
      storage = bucket_pool_.take(b.count);
      storage.zero();  // the padding is reduced too
    }
    p->grad =
        Buffer<Acc<T>>::view(this->device_, storage.data() + (t.offset - b.offset), t.count);
  }
}

template <typename T>
void DataParallelTrainer<T>::after_backward(int unit) {
  const bool overlap = overlapped();
  for (Parameter<T>* p : this->unit_parameters(unit)) {
    for (int bucket : bucketer_->mark_ready(static_cast<int>(p->tensor_id)))
      if (overlap) launch_bucket(bucket);
    if (sharded_gradients()) p->grad = Buffer<Acc<T>>();
  }
  if (sharded_gradients() && overlap) retire_buckets(1);
}

template <typename T>
void DataParallelTrainer<T>::finish_gradient_sync() {
  if (!overlapped())  // every bucket goes now
    for (int b = 0; b < static_cast<int>(bucketer_->buckets().size()); ++b) launch_bucket(b);
  wait_all();
}

template <typename T>
void DataParallelTrainer<T>::after_optimizer_step() {
  if (this->config_.zero == 0) return;
  const int ranks = this->comm_->size();
  for (const auto& b : bucketer_->buckets())
    pending_.push_back(this->comm_->all_gather_async(shard_values_.data() + b.shard_offset,
                                                     values_.data() + b.offset, b.count / ranks,
                                                     data_type_of<T>()));
  wait_all();
}

template <typename T>
std::vector<NamedTensor> DataParallelTrainer<T>::gather_parameters() {
  std::vector<NamedTensor> tensors;
  // Every rank holds the same full parameters; rank 0's are the answer.
  if (this->comm_->rank() == 0) append_named_tensors<T>(this->model_.parameters(), tensors);
  return tensors;
}

template class DataParallelTrainer<float>;
template class DataParallelTrainer<double>;
template class DataParallelTrainer<bf16>;
template class DataParallelTrainer<fp16>;

}  // namespace mlps
