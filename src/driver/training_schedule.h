#pragma once
// Which samples each iteration trains on: epoch e visits the training split in epoch_order(e),
// global batch b of the epoch is positions [b·B, (b+1)·B); an incomplete last batch is dropped.
#include <cstdint>

#include "src/options.h"

namespace mlps {

struct TrainingSchedule {
  int64_t train_samples = 0;
  int64_t batches_per_epoch = 0;
  int64_t iterations = 0;
  int64_t global_batch = 0;

  // Throws InputError when the batch does not fit the training split.
  static TrainingSchedule make(const Options& options, int64_t train_samples);
  int64_t epoch_of(int64_t iteration) const { return iteration / batches_per_epoch; }
  int64_t first_position(int64_t iteration) const {
    return (iteration % batches_per_epoch) * global_batch;
  }
  bool ends_epoch(int64_t iteration) const { return (iteration + 1) % batches_per_epoch == 0; }
};

}  // namespace mlps
