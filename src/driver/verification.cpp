#include "src/driver/verification.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "src/data/shuffle.h"
#include "src/base/human_bytes.h"
#include "src/memory/model_memory.h"
#include "src/schemes/serial/serial_trainer.h"

namespace mlps {

namespace {

double relative_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - ref[i]) * (a[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(norm == 0 ? diff : diff / norm);
}

// The serial model's losses (and, after training, final weights), on the CPU in T.
struct Replay {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;
};

// Training: the schedule's iterations. --inference: forward passes (mean loss per batch) over
// test batches of options.batch rows that start at batch_starts, with the initial weights.
template <typename T>
Replay replay_serially(const Options& options, const Dataset& dataset,
                       const TrainingSchedule& schedule, const std::vector<int64_t>& batch_starts) {
  // With --math tf32 the fp32 replay rounds GEMM inputs to TF32 as the run's tensor cores do, so
  // its error against fp64 (the tolerance's scale) is TF32's.
  SerialTrainer<T> reference(
      DeviceConfig(DeviceKind::cpu, storage_format(options.precision), false, options.math),
      options.model, options.optimizer, options.seed, options.batch);
  const int image_size = static_cast<int>(options.model.image_size);
  Replay replay;
  if (options.inference) {
    for (int64_t first : batch_starts) {
      const HostBatch batch =
          load_batch_range(dataset, Split::test, first, options.batch, image_size);
      replay.losses.push_back(reference.evaluate(batch, options.batch).loss_sum /
                              static_cast<double>(options.batch));
    }
    return replay;
  }
  PhaseTimer timer(reference.device());
  std::vector<int64_t> order;
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    if (it == 0 || schedule.first_position(it) == 0)
      order = epoch_order(schedule.train_samples, options.seed, schedule.epoch_of(it));
    const HostBatch batch = load_batch(dataset, Split::train, order, schedule.first_position(it),
                                       schedule.global_batch, image_size);
    timer.begin_iteration();
    reference.train_step(batch, schedule.global_batch, timer);
    timer.end_iteration();
    replay.losses.push_back(reference.step_loss());
  }
  replay.parameters = reference.gather_parameters();
  return replay;
}

// Relative errors against a reference, item by item: each iteration's (or batch's) loss, then
// each tensor.
struct ItemErrors {
  std::vector<std::string> names;
  std::vector<double> errors;
  size_t loss_items = 0;
};

ItemErrors item_errors(const std::vector<double>& losses,
                       const std::vector<NamedTensor>& parameters, const Replay& ref,
                       bool inference) {
  ItemErrors e;
  for (size_t it = 0; it < ref.losses.size(); ++it) {
    e.names.push_back((inference ? "loss at batch " : "loss at iteration ") +
                      std::to_string(it + 1));
    e.errors.push_back(std::abs(losses.at(it) - ref.losses[it]) /
                       std::max(std::abs(ref.losses[it]), 1e-300));
  }
  e.loss_items = e.errors.size();
  if (ref.parameters.size() != parameters.size())
    throw std::logic_error("verify: scheme gathered " + std::to_string(parameters.size()) +
                           " tensors, the model has " + std::to_string(ref.parameters.size()));
  for (size_t t = 0; t < ref.parameters.size(); ++t) {
    if (ref.parameters[t].values.size() != parameters[t].values.size())
      throw std::logic_error("verify: tensor " + ref.parameters[t].name + " has the wrong size");
    e.names.push_back(ref.parameters[t].name);
    e.errors.push_back(relative_error(parameters[t].values, ref.parameters[t].values));
  }
  return e;
}

Verification compare_with_serial(const Options& options, const Dataset& dataset,
                                 const TrainingSchedule& schedule,
                                 const std::vector<int64_t>& batch_starts,
                                 const std::vector<double>& losses,
                                 const std::vector<NamedTensor>& parameters) {
  const bool inference = options.inference;
  const Replay exact = replay_serially<double>(options, dataset, schedule, batch_starts);
  const ItemErrors run = item_errors(losses, parameters, exact, inference);
  std::vector<double> tolerances(run.errors.size(), kFp64Tolerance);
  Verification v;
  if (options.precision != Precision::fp64) {
    // Rounding noise grows along training (fast where it is unstable), so a training run is
    // held to the envelope of serial's own error in its precision so far: the running maximum up
    // to each iteration for its loss, the whole run's for the final tensors. Early iterations,
    // where the noise is still tiny, stay tight and catch a wrong scheme; the envelope and the
    // factor absorb that two correct runs diverge from fp64 along different noise. Inference has
    // no training to amplify rounding: each batch's own serial error is the scale.
    // float with the run's storage format: serial fp32, or serial bf16/fp16 mixed precision.
    const Replay single = replay_serially<float>(options, dataset, schedule, batch_starts);
    const ItemErrors serial = item_errors(single.losses, single.parameters, exact, inference);
    double envelope = 0;
    for (size_t i = 0; i < run.loss_items; ++i) {
      envelope = std::max(envelope, serial.errors[i]);
      tolerances[i] = std::max(kFp32LossToleranceFloor,
                               kFp32ToleranceFactor * (inference ? serial.errors[i] : envelope));
    }
    for (size_t i = run.loss_items; i < serial.errors.size(); ++i)
      envelope = std::max(envelope, serial.errors[i]);
    for (size_t i = run.loss_items; i < tolerances.size(); ++i)
      tolerances[i] = std::max(kFp32ToleranceFloor, kFp32ToleranceFactor * envelope);
    v.serial_fp32_error = envelope;
  }
  // The verdict is the item closest to (or furthest past) its tolerance; a NaN always fails.
  double worst_ratio = -1;
  for (size_t i = 0; i < run.errors.size(); ++i) {
    const double ratio = run.errors[i] / tolerances[i];
    if (std::isnan(ratio) || ratio > worst_ratio) {
      worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
      v.max_relative_error = run.errors[i];
      v.tolerance = tolerances[i];
      v.worst_at = run.names[i];
    }
  }
  v.verdict = worst_ratio <= 1.0 ? "PASS" : "FAIL";
  return v;
}

}  // namespace

void verify_run(const Options& o, const Dataset& dataset, const TrainingSchedule& schedule,
                const std::vector<int64_t>& batch_starts,
                const std::vector<NamedTensor>& parameters, RunRecord& record) {
  const bool fp64 = o.precision == Precision::fp64;
  const std::string what = o.inference
                               ? std::to_string(batch_starts.size()) + " batches' forward passes"
                               : std::to_string(schedule.iterations) + " iterations";
  std::printf("verify: recomputing %s serially on the CPU in fp64%s%s%s (about %s of host "
              "memory, as the memory check counted) ...\n",
              what.c_str(), fp64 ? "" : " and in ", fp64 ? "" : to_string(o.precision),
              o.math == GemmCompute::tf32 ? " with TF32-rounded GEMM inputs" : "",
              human_bytes(verify_replay_bytes(o)).c_str());
  std::fflush(stdout);
  const Verification& v = record.verification =
      compare_with_serial(o, dataset, schedule, batch_starts, record.loss, parameters);
  std::printf("verify: %s  relative error %.3e at %s, tolerance there %.1e (%s; the item nearest "
              "its tolerance)\n",
              v.verdict.c_str(), v.max_relative_error, v.worst_at.c_str(), v.tolerance,
              o.inference ? "batch losses vs serial forward passes"
                          : "losses and final weights vs serial fp64");
  if (!o.inference && !fp64)
    std::printf("verify: %s tolerances are %.0f x the largest error serial %s itself shows "
                "against fp64 so far (at least %.0e for losses, %.0e for tensors; over the run "
                "%.3e)\n",
                to_string(o.precision), kFp32ToleranceFactor, to_string(o.precision),
                kFp32LossToleranceFloor, kFp32ToleranceFloor, v.serial_fp32_error);
}

}  // namespace mlps
