#pragma once
// --verify: rank 0 retrains the same iterations on the same samples with the serial model in
// fp64 on the CPU (and, below fp64, in the run's precision too) and compares the scheme's loss
// curve and final weights with it.
#include <vector>

#include "src/data/dataset.h"
#include "src/driver/training_schedule.h"
#include "src/results/run_record.h"
#include "src/schemes/trainer.h"

namespace mlps {

// fp32, bf16 and fp16 runs PASS when each iteration's loss is within max(1e-5, factor × the
// largest error serial in that precision shows against fp64 up to that iteration), and each
// final tensor within max(1e-3, factor × its largest error over the run): rounding alone,
// amplified as the same training amplifies it, stays within that; a wrong gradient or a missed
// update does not, and shows in the first iterations, where the bound is still tight.
inline constexpr double kFp32LossToleranceFloor = 1e-5;
inline constexpr double kFp32ToleranceFloor = 1e-3;
inline constexpr double kFp32ToleranceFactor = 100.0;

// fp64 runs differ from serial fp64 only in the order of sums.
inline constexpr double kFp64Tolerance = 1e-10;

// Rank 0, after the run: prints what it recomputes, sets record.verification and prints the
// verdict, the item nearest to (or past) its tolerance. Relative errors are |loss − ref| / |ref|
// per iteration and ‖w − w_ref‖₂ / ‖w_ref‖₂ per final tensor (`parameters`). With
// options.inference: each batch's mean loss (test rows [start, start + batch) for each of
// batch_starts) against serial forward passes from the same initial weights, held in other
// precisions to the factor × serial's own error on the same batch.
void verify_run(const Options& options, const Dataset& dataset, const TrainingSchedule& schedule,
                const std::vector<int64_t>& batch_starts,
                const std::vector<NamedTensor>& parameters, RunRecord& record);

}  // namespace mlps
