#pragma once
// The pieces the training and the inference loops share: what each iteration records, and how
// a run ends (rank 0 writes the file, every rank returns the same exit code).
#include <string>
#include <vector>

#include "src/driver/iteration_recorder.h"
#include "src/schemes/trainer.h"
#include "src/timing/phase_timer.h"

namespace mlps {

// Every phase, "exposed_comm", then the scheme's extra timings: one value each per iteration.
std::vector<std::string> run_timing_names(const Trainer& trainer);

// Ends the timer's iteration and records it with the trainer's blocked time, extra timings and
// communication totals; returns the iteration's timings (step first).
std::vector<double> record_iteration(PhaseTimer& timer, Trainer& trainer,
                                     IterationRecorder& recorder);

// Rank 0 writes the result file; returns on every rank 0, or 3 when verification failed.
int finish_run(const RunContext& context, const std::string& out_path, const RunRecord& record);

}  // namespace mlps
