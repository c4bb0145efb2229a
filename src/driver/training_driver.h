#pragma once
// The loop every scheme shares: data order, warm-up, timed iterations, per-epoch evaluation,
// progress, summary, --verify and the HDF5 result file; and --inference's timed batches.
#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/driver/training_schedule.h"
#include "src/options/options.h"
#include "src/schemes/trainer.h"

namespace mlps {

// Rank 0 creates the directory of the file `flag` names and checks it can write there; every
// rank throws the same InputError when it cannot. `example`: a file name the message suggests
// when path is a folder.
void check_output_path(const RunContext& context, const std::string& path,
                       const std::string& flag = "--out", const std::string& example = "run.h5");

// Runs the training (or, with options.inference, the inference batches); returns the process
// exit code (0, or 3 when --verify fails), the same on every rank. The schedule is made (and so
// checked) before the trainer allocates anything.
int run_training(const RunContext& context, const Options& options,
                 const TrainingSchedule& schedule, Trainer& trainer, const Dataset& dataset);

}  // namespace mlps
