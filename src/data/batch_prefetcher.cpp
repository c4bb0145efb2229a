#include "src/data/batch_prefetcher.h"

#include <utility>

namespace mlps {

// The worker runs at normal priority: at SCHED_IDLE it starved behind ranks sharing a core
// (MPI polls while it waits), and the step then waited for it longer than loading itself.
BatchPrefetcher::BatchPrefetcher(Loader load, int64_t count, bool ahead)
    : load_(std::move(load)), count_(count) {
  if (ahead) worker_ = std::thread([this] { work(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

HostBatch BatchPrefetcher::take(int64_t index) {
  if (!worker_.joinable()) return load_(index);
  std::unique_lock lock(mutex_);
  if (wanted_ != index) {  // the first batch: nothing was asked for ahead of it
    wanted_ = index;
    changed_.notify_all();
  }
  changed_.wait(lock, [&] { return ready_.has_value() || error_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  HostBatch batch = std::move(*ready_);
  ready_.reset();
  if (index + 1 < count_) {
    wanted_ = index + 1;
    changed_.notify_all();
  }
  return batch;
}

void BatchPrefetcher::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || wanted_ != loaded_; });
    if (stop_) return;
    const int64_t index = wanted_;
    lock.unlock();
    std::optional<HostBatch> batch;
    std::exception_ptr error;
    try {
      batch = load_(index);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    loaded_ = index;
    ready_ = std::move(batch);
    error_ = error;
    changed_.notify_all();
  }
}

}  // namespace mlps
