#include "src/driver/training_schedule.h"

#include "src/errors.h"

namespace mlps {

TrainingSchedule TrainingSchedule::make(const Options& options, int64_t train_samples) {
  TrainingSchedule s;
  s.train_samples = train_samples;
  s.global_batch = options.batch;
  s.batches_per_epoch = train_samples / options.batch;
  if (s.batches_per_epoch == 0)
    throw InputError("--batch " + std::to_string(options.batch) + " exceeds the " +
                     std::to_string(train_samples) + " training samples");
  s.iterations = options.iters > 0 ? options.iters : options.epochs * s.batches_per_epoch;
  if (options.warmup >= s.iterations)
    throw InputError("--warmup " + std::to_string(options.warmup) + " leaves none of the " +
                     std::to_string(s.iterations) + " iterations to time");
  return s;
}

}  // namespace mlps
