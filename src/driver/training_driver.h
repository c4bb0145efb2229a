#pragma once
// The loop every scheme shares: data order, warm-up, timed iterations, per-epoch evaluation,
// progress, summary, --verify and the HDF5 result file.
#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/driver/training_schedule.h"
#include "src/options.h"
#include "src/schemes/trainer.h"

namespace mlps {

// Default result path: results/<scheme>-<UTC time>-<pid>.h5 (rank 0's clock and pid).
std::string default_result_path(const std::string& scheme);

// Rank 0 creates the result file's directory and checks it can write there; every rank throws
// the same InputError when it cannot.
void check_output_path(const RunContext& context, const std::string& path);
// Every rank's device peak bytes, on rank 0 (collective).
std::vector<int64_t> gather_peak_bytes(const RunContext& context, size_t peak);

// Runs the training (or, with options.inference, run_inference); returns the process exit code (0, or 3 when --verify fails), the same on
// every rank. The schedule is made (and so checked) before the trainer allocates anything.
int run_training(const RunContext& context, const Options& options,
                 const TrainingSchedule& schedule, Trainer& trainer, const Dataset& dataset);

}  // namespace mlps
