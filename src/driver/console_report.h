#pragma once
// What rank 0 prints: the settings header, progress lines and the closing summary table.
#include <string>

#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/driver/training_schedule.h"
#include "src/results/run_record.h"
#include "src/schemes/trainer.h"

namespace mlps {

void print_settings_header(const RunContext& context, const Options& options,
                           const TrainingSchedule& schedule, const Trainer& trainer,
                           const Dataset& dataset, const std::string& out_path);

// The header's "blas" and "processor" lines (and a "notice" when the kernels are not the
// processor's best): which kernels every CPU timing of the run comes from.
void print_blas_lines();

// The summary of a run of `iterations` steps (or, inference, batches) of global_batch samples.
void print_summary(const RunRecord& record, int64_t iterations, int64_t warmup,
                   int64_t global_batch, double flops_per_sample, bool inference);

// With a prediction (--machine): bin/plan's model beside the measurement (step, exposed
// communication, pipeline bubble, peak memory) and the error of each.
void print_prediction(const RunRecord& record, int64_t warmup);

}  // namespace mlps
