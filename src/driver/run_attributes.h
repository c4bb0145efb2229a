#pragma once
// The root attributes every result file carries, training or inference (results/README.md).
#include <string>

#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/options.h"
#include "src/results/run_record.h"
#include "src/schemes/trainer.h"

namespace mlps {

struct RunDescription {
  std::string mode;  // "train" or "inference"
  int64_t iterations = 0;  // training steps, or inference batches
  int64_t global_batch = 0;
  double flops_per_sample = 0;
  std::string start_time;
  std::string hosts;
};

// Rank 0: fills record.string_attributes and record.integer_attributes.
void fill_run_attributes(RunRecord& record, const RunContext& context, const Options& options,
                         const Trainer& trainer, const Dataset& dataset,
                         const RunDescription& run);

}  // namespace mlps
