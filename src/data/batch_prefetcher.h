#pragma once
// Loads the next batch on a background thread while the current step computes, so the data
// phase of a step is only the wait for a batch that is usually ready. Batches are taken in
// order 0, 1, ...; one worker thread loads them one at a time, so the loader may keep state
// between calls (an epoch's sample order) without locks. Datasets load from const, shared state.
// Without `ahead` (--prefetch off) there is no thread: take() loads the batch itself.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "src/data/batch_loader.h"

namespace mlps {

class BatchPrefetcher {
 public:
  using Loader = std::function<HostBatch(int64_t index)>;
  BatchPrefetcher(Loader load, int64_t count, bool ahead = true);
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;
  ~BatchPrefetcher();  // waits for a load in flight, then stops the worker

  // Batch `index` (the one after the last taken), and the start of the next one's loading. A
  // loader's exception is thrown here, for the batch it failed on.
  HostBatch take(int64_t index);

 private:
  void work();

  Loader load_;
  int64_t count_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t wanted_ = -1;  // the batch the worker is to load (or has loaded)
  int64_t loaded_ = -1;  // the last batch it finished
  std::optional<HostBatch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;  // last: it starts once everything above exists (none without ahead)
};

}  // namespace mlps
