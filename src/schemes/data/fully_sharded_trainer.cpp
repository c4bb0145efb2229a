#include "src/schemes/data/fully_sharded_trainer.h"

#include <chrono>

#include "src/schemes/named_tensors.h"

namespace mlps {

template <typename T>
FullyShardedTrainer<T>::FullyShardedTrainer(const TrainerSetup& s, const DataGrid& config)
    : DataParallelBase<T>(s, config) {
  const int ranks = this->shard_ranks();
  const int rank = this->shard_rank();
  int64_t shard = 0;
  for (int u = 0; u < this->model_.unit_count(); ++u) {
    UnitLayout layout;
    int64_t used = 0;
    for (const Parameter<T>* p : this->model_.unit_parameters(u)) {
      layout.offsets.push_back(used);
      used += p->size();
    }
    layout.count = (used + ranks - 1) / ranks * ranks;
    layout.shard_offset = shard;
    shard += layout.count / ranks;
    largest_unit_ = std::max(largest_unit_, layout.count);
    units_.push_back(std::move(layout));
  }
  const int buffers = config.overlap ? 2 : 1;
  if (this->comm_) reducing_pool_.reserve(largest_unit_, buffers);
  // G = 1 computes with its shard in place, unless it lives off the device.
  if (this->comm_ || config.offload_params) gathered_pool_.reserve(largest_unit_, buffers);
  if (this->comm_ && config.offload_params) fetched_pool_.reserve(largest_unit_ / ranks, buffers);
  // Each rank generates only its own shard of the initial weights (padding stays zero), in
  // fp32 for typed storage: the optimizer's master, of which the 16-bit values are the rounding.
  std::vector<Acc<T>> host(static_cast<size_t>(shard), Acc<T>(0));
  for (int u = 0; u < this->model_.unit_count(); ++u) {
    const UnitLayout& layout = units_[u];
    const int64_t piece = layout.count / ranks;
    const int64_t first = rank * piece;
    const auto& params = this->model_.unit_parameters(u);
    for (size_t i = 0; i < params.size(); ++i) {
      const int64_t begin = std::max(first, layout.offsets[i]);
      const int64_t end = std::min(first + piece, layout.offsets[i] + params[i]->size());
      if (begin < end)
        fill_initial_range(host.data() + layout.shard_offset + (begin - first), s.seed, *params[i],
                           begin - layout.offsets[i], end - begin);
    }
  }
  shard_grads_ = Buffer<Acc<T>>(this->device_, shard);
  shard_grads_.zero();
  if (config.offload_params) {
    this->add_to_optimizer([&] {
      int rank = 0;
      MPI_Comm_rank(this->grid_.world(), &rank);
      // Chunks of the optimizer's, so that each updated chunk lands aligned in the file.
      shard_store_ = std::make_unique<OffloadedState<T>>(
          config.offload_dir, rank, kOffloadChunkBytes / static_cast<int64_t>(sizeof(Acc<T>)),
          "params");
      std::vector<T> values;
      for (int u = 0; u < this->model_.unit_count(); ++u) {
        const Acc<T>* initial = host.data() + units_[u].shard_offset;
        values.resize(static_cast<size_t>(shard_count(u)));
        for (size_t i = 0; i < values.size(); ++i) {
          if constexpr (is_16bit_v<T>) values[i] = from_float<T>(initial[i]);
          else values[i] = initial[i];
        }
        shard_store_->add(shard_count(u), {values.data()});
        if (shard_store_->on_disk() && read_staging_.bytes() < shard_store_->read_bytes(u))
          read_staging_ = ScratchBuffer(shard_store_->read_bytes(u));
        this->optimizer_.add_offloaded_values(
            unit_shard(shard_grads_, u), shard_count(u), initial,
            [this, u](int64_t first, int64_t count, const T* updated) {
              shard_store_->write(u, first, count, updated);
            });
      }
    });
    return;
  }
  shard_values_ = Buffer<T>(this->device_, shard);
  if constexpr (is_16bit_v<T>) {
    std::vector<T> values(host.size());
    for (size_t i = 0; i < host.size(); ++i) values[i] = from_float<T>(host[i]);
    shard_values_.upload(values);
    this->add_to_optimizer(
        [&] { this->optimizer_.add(shard_values_.data(), shard_grads_.data(), shard, host.data()); });
  } else {
    shard_values_.upload(host);
    this->add_to_optimizer(
        [&] { this->optimizer_.add(shard_values_.data(), shard_grads_.data(), shard); });
  }
}

// A synchronous copy: the file's staging, or host memory, is reused by the next fetch.
template <typename T>
void FullyShardedTrainer<T>::fetch(int unit, T* to) {
  const auto start = std::chrono::steady_clock::now();
  const T* values = nullptr;
  if (shard_store_->on_disk()) {
    T* staged = reinterpret_cast<T*>(read_staging_.data());
    if (reading_unit_ == unit) {
      reading_unit_ = -1;
      reading_.get();
    } else {
      finish_read();
      shard_store_->read_into(unit, staged);
    }
    values = staged;
  } else {
    values = shard_store_->read(unit);
  }
  this->device_.to_device(to, values, sizeof(T) * static_cast<size_t>(shard_count(unit)));
  fetch_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <typename T>
void FullyShardedTrainer<T>::prefetch(int unit) {
  if (!shard_store_ || !shard_store_->on_disk() || unit < 0 ||
      unit >= static_cast<int>(units_.size()) || reading_.valid())
    return;
  reading_unit_ = unit;
  reading_ = std::async(std::launch::async, [this, unit] {
    shard_store_->read_into(unit, reinterpret_cast<T*>(read_staging_.data()));
  });
}

template <typename T>
void FullyShardedTrainer<T>::finish_read() {
  if (!reading_.valid()) return;
  reading_unit_ = -1;
  reading_.get();
}

template <typename T>
void FullyShardedTrainer<T>::start_gather(int unit) {
  if (!this->comm_ || unit < 0 || unit >= static_cast<int>(units_.size()) ||
      gathered_.count(unit))
    return;
  Gathered g{gathered_pool_.take(largest_unit_), nullptr, {}};
  const T* shard = nullptr;
  if (shard_store_) {
    g.fetched = fetched_pool_.take(largest_unit_ / this->shard_ranks());
    fetch(unit, g.fetched.data());
    shard = g.fetched.data();
  } else {
    shard = unit_shard(shard_values_, unit);
  }
  g.pending = this->comm_->all_gather_async(shard, g.values.data(), shard_count(unit),
                                            data_type_of<T>());
  gathered_.emplace(unit, std::move(g));
}

template <typename T>
void FullyShardedTrainer<T>::use_gathered(int unit) {
  const Params& params = this->unit_parameters(unit);
  T* values = nullptr;
  if (this->comm_) {
    start_gather(unit);
    Gathered& g = gathered_.at(unit);
    complete(g.pending);
    values = g.values.data();
  } else if (shard_store_) {  // G = 1: the whole unit, brought back
    if (!gathered_.count(unit)) {
      Gathered g{gathered_pool_.take(largest_unit_), nullptr, {}};
      fetch(unit, g.values.data());
      gathered_.emplace(unit, std::move(g));
    }
    values = gathered_.at(unit).values.data();
  } else {
    values = unit_shard(shard_values_, unit);  // G = 1: the whole unit, in place
  }
  for (size_t i = 0; i < params.size(); ++i)
    params[i]->value = Buffer<T>::view(this->device_, values + units_[unit].offsets[i],
                                       params[i]->size());
}

template <typename T>
void FullyShardedTrainer<T>::release(int unit) {
  for (Parameter<T>* p : this->unit_parameters(unit)) p->value = Buffer<T>();
  const auto it = gathered_.find(unit);
  if (it == gathered_.end()) return;
  gathered_pool_.give(std::move(it->second.values));
  fetched_pool_.give(std::move(it->second.fetched));
  gathered_.erase(it);
}

template <typename T>
void FullyShardedTrainer<T>::before_forward(int unit) {
  use_gathered(unit);
  if (this->config_.overlap) start_gather(unit + 1);  // prefetch the next unit
  prefetch(unit + fetch_ahead());
}

template <typename T>
void FullyShardedTrainer<T>::before_backward(int unit) {
  const Params& params = this->unit_parameters(unit);
  // Advances the shards' all-reduces in flight (MPICH: only inside MPI calls), as DDP does.
  if (this->replica_comm_) this->replica_comm_->progress();
  use_gathered(unit);
  if (this->config_.overlap) start_gather(unit - 1);  // backward runs units in reverse
  prefetch(unit - fetch_ahead());
  Acc<T>* grads = unit_shard(shard_grads_, unit);  // G = 1: the whole unit, in place
  if (this->comm_) {
    Reducing r{unit, reducing_pool_.take(largest_unit_), nullptr};
    // The unit's part, padding included (it is reduced too); the rest is not read.
    this->device_.zero(r.grads.data(), sizeof(Acc<T>) * static_cast<size_t>(units_[unit].count));
    grads = r.grads.data();
    reducing_.push_back(std::move(r));
  }
  for (size_t i = 0; i < params.size(); ++i)
    params[i]->grad = Buffer<Acc<T>>::view(this->device_, grads + units_[unit].offsets[i],
                                           params[i]->size());
}

template <typename T>
void FullyShardedTrainer<T>::after_backward(int unit) {
  release(unit);
  for (Parameter<T>* p : this->unit_parameters(unit)) p->grad = Buffer<Acc<T>>();
  if (!this->comm_) {  // G = 1: nothing to reduce within the group
    replicate(unit);
    return;
  }
  Reducing& r = reducing_.back();
  r.pending = this->comm_->reduce_scatter_async(r.grads.data(), unit_shard(shard_grads_, unit),
                                                shard_count(unit), data_type_of<Acc<T>>());
  // With overlap the previous unit's reduction had this unit's backward to finish; keeping at
  // most this one in flight bounds the gradient memory to two units.
  finish_reductions(this->config_.overlap ? 1 : 0);
}

template <typename T>
void FullyShardedTrainer<T>::finish_reductions(size_t keep) {
  while (reducing_.size() > keep) {
    reducing_.front().pending->wait();
    replicate(reducing_.front().unit);
    reducing_pool_.give(std::move(reducing_.front().grads));
    reducing_.erase(reducing_.begin());
  }
}

template <typename T>
void FullyShardedTrainer<T>::replicate(int unit) {
  if (!this->replica_comm_) return;
  Acc<T>* shard = unit_shard(shard_grads_, unit);
  replicating_.push_back(this->replica_comm_->all_reduce_async(shard, shard, shard_count(unit),
                                                               data_type_of<Acc<T>>()));
  // The shard's storage is the optimizer's, so an all-reduce in flight holds no extra memory;
  // without overlap each one completes before backward goes on.
  if (this->config_.overlap) return;
  replicating_.back()->wait();
  replicating_.pop_back();
}

template <typename T>
void FullyShardedTrainer<T>::finish_gradient_sync() {
  finish_read();  // the update rewrites the shards
  finish_reductions(0);
  for (PendingComm& p : replicating_) p->wait();
  replicating_.clear();
}

template <typename T>
std::vector<NamedTensor> FullyShardedTrainer<T>::gather_parameters() {
  std::vector<NamedTensor> tensors;
  for (int u = 0; u < this->model_.unit_count(); ++u) {
    use_gathered(u);
    if (this->grid_.coordinate("data") == 0 && this->shard_rank() == 0)
      append_named_tensors<T>(this->unit_parameters(u), tensors);
    release(u);
  }
  this->discard_untaken_comm();  // verification traffic is not part of any iteration
  return tensors;
}

template <typename T>
std::vector<std::string> FullyShardedTrainer<T>::extra_timing_names() const {
  std::vector<std::string> names = DataParallelBase<T>::extra_timing_names();
  if (shard_store_) names.push_back("param_fetch");
  return names;
}

template <typename T>
std::vector<double> FullyShardedTrainer<T>::take_extra_timings() {
  std::vector<double> step = DataParallelBase<T>::take_extra_timings();
  if (shard_store_) step.push_back(fetch_seconds_ - fetch_taken_);
  fetch_taken_ = fetch_seconds_;
  return step;
}

template class FullyShardedTrainer<float>;
template class FullyShardedTrainer<double>;
template class FullyShardedTrainer<bf16>;
template class FullyShardedTrainer<fp16>;

}  // namespace mlps
