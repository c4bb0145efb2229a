#pragma once
// Which samples each iteration trains on: epoch e visits the training split in epoch_order(e),
// global batch b of the epoch is positions [b·B, (b+1)·B); an incomplete last batch is dropped.
#include <cstdint>
#include <string>

#include "src/data/dataset.h"
#include "src/base/errors.h"
#include "src/options/options.h"

namespace mlps {

struct TrainingSchedule {
  int64_t train_samples = 0;
  int64_t batches_per_epoch = 0;
  int64_t iterations = 0;
  int64_t global_batch = 0;

  // Throws InputError when the batch does not fit the split. Split::test: --inference's
  // batches, each pass over the test samples an "epoch".
  static TrainingSchedule make(const Options& options, int64_t samples,
                               Split split = Split::train) {
    const bool test = split == Split::test;
    const int64_t per_epoch = samples / options.batch;
    if (per_epoch == 0)
      throw InputError(std::string(test ? "--inference: " : "") + "--batch " +
                       std::to_string(options.batch) + " exceeds the " + std::to_string(samples) +
                       (test ? " test samples" : " training samples"));
    const int64_t iterations = options.iters > 0 ? options.iters : options.epochs * per_epoch;
    if (options.warmup >= iterations)
      throw InputError("--warmup " + std::to_string(options.warmup) + " leaves none of the " +
                       std::to_string(iterations) +
                       (test ? " inference batches to time" : " iterations to time"));
    return {samples, per_epoch, iterations, options.batch};
  }
  int64_t epoch_of(int64_t iteration) const { return iteration / batches_per_epoch; }
  int64_t first_position(int64_t iteration) const {
    return (iteration % batches_per_epoch) * global_batch;
  }
  bool ends_epoch(int64_t iteration) const { return (iteration + 1) % batches_per_epoch == 0; }
};

}  // namespace mlps
