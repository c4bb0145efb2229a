#pragma once
// --verify: rank 0 retrains the same iterations on the same samples with the serial model in
// fp64 on the CPU (and, for fp32 runs, in fp32 too) and compares the scheme's loss curve and
// final weights with it.
#include <vector>

#include "src/data/dataset.h"
#include "src/driver/trainer.h"
#include "src/driver/training_schedule.h"
#include "src/results/run_record.h"

namespace mlps {

// fp32 runs PASS when their error against the fp64 reference is at most
// max(floor, factor × serial fp32's error against it): rounding alone, amplified as the same
// training amplifies it, stays within that; a wrong gradient or a missed update does not.
inline constexpr double kFp32ToleranceFloor = 1e-3;
inline constexpr double kFp32ToleranceFactor = 10.0;

// The tolerance on relative error for a run in this precision against the fp64 reference
// (for fp32 the floor; the run's own tolerance may be larger, see above).
double verification_tolerance(Precision precision);

// Worst relative error: max over iterations of |loss − ref| / |ref| and over tensors of
// ‖w − w_ref‖₂ / ‖w_ref‖₂. Rank 0 only.
Verification verify_against_serial(const Options& options, const Dataset& dataset,
                                   const TrainingSchedule& schedule,
                                   const std::vector<double>& losses,
                                   const std::vector<NamedTensor>& parameters);

}  // namespace mlps
