#include "src/driver/verification.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "src/data/shuffle.h"
#include "src/schemes/serial_trainer.h"

namespace mlps {

namespace {

double relative_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - ref[i]) * (a[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (norm == 0) return std::sqrt(diff);
  return std::sqrt(diff / norm);
}

// The serial model's losses and final weights over the run's iterations, on the CPU in T.
struct Replay {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;
};

template <typename T>
Replay replay_serially(const Options& options, const Dataset& dataset,
                       const TrainingSchedule& schedule) {
  SerialTrainer<T> reference(DeviceConfig(DeviceKind::cpu, storage_format(options.precision)),
                             options.model, options.optimizer, options.seed,
                             schedule.global_batch);
  PhaseTimer timer(reference.device());
  Replay replay;
  std::vector<int64_t> order;
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    if (it == 0 || schedule.first_position(it) == 0)
      order = epoch_order(schedule.train_samples, options.seed, schedule.epoch_of(it));
    const HostBatch batch = load_batch(dataset, Split::train, order, schedule.first_position(it),
                                       schedule.global_batch,
                                       static_cast<int>(options.model.image_size));
    timer.begin_iteration();
    replay.losses.push_back(reference.train_step(batch, schedule.global_batch, timer));
    timer.end_iteration();
  }
  replay.parameters = reference.gather_parameters();
  return replay;
}

// Serial forward passes (mean loss per batch) over test batches of options.batch rows that
// start at batch_starts, on the CPU in T, with the initial weights.
template <typename T>
Replay replay_inference(const Options& options, const Dataset& dataset,
                        const std::vector<int64_t>& batch_starts) {
  SerialTrainer<T> reference(DeviceConfig(DeviceKind::cpu, storage_format(options.precision)),
                             options.model, options.optimizer, options.seed,
                             options.batch);
  Replay replay;
  for (int64_t first : batch_starts) {
    const HostBatch batch = load_batch_range(dataset, Split::test, first, options.batch,
                                             static_cast<int>(options.model.image_size));
    replay.losses.push_back(reference.evaluate(batch, options.batch).loss_sum /
                            static_cast<double>(options.batch));
  }
  return replay;
}

// Relative errors against a reference, item by item: each iteration's loss, then each tensor.
struct ItemErrors {
  std::vector<std::string> names;
  std::vector<double> errors;
  size_t loss_items = 0;
};

ItemErrors item_errors(const std::vector<double>& losses,
                       const std::vector<NamedTensor>& parameters, const Replay& ref) {
  ItemErrors e;
  for (size_t it = 0; it < ref.losses.size(); ++it) {
    e.names.push_back("loss at " + std::string(ref.parameters.empty() && parameters.empty() ? "batch " : "iteration ") + std::to_string(it + 1));
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

// The verdict is the item closest to (or furthest past) its tolerance; a NaN always fails.
void judge(const ItemErrors& run, const std::vector<double>& tolerances, Verification& v) {
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
}

}  // namespace

Verification verify_against_serial(const Options& options, const Dataset& dataset,
                                   const TrainingSchedule& schedule,
                                   const std::vector<double>& losses,
                                   const std::vector<NamedTensor>& parameters) {
  const Replay exact = replay_serially<double>(options, dataset, schedule);
  const ItemErrors run = item_errors(losses, parameters, exact);
  std::vector<double> tolerances(run.errors.size(), kFp64Tolerance);
  Verification v;
  if (options.precision != Precision::fp64) {
    // Rounding noise grows along the run (fast where training is unstable), so an fp32 run is
    // held to the envelope of serial fp32's own error so far: the running maximum up to each
    // iteration for its loss, the whole run's for the final tensors. Early iterations, where
    // the noise is still tiny, stay tight and catch a wrong scheme; the envelope and the factor
    // absorb that two correct fp32 runs diverge from fp64 along different noise.
    // float with the run's storage format: serial fp32, or serial bf16/fp16 mixed precision.
    const Replay single = replay_serially<float>(options, dataset, schedule);
    const ItemErrors serial = item_errors(single.losses, single.parameters, exact);
    double envelope = 0;
    for (size_t i = 0; i < run.loss_items; ++i) {
      envelope = std::max(envelope, serial.errors[i]);
      tolerances[i] = std::max(kFp32LossToleranceFloor, kFp32ToleranceFactor * envelope);
    }
    for (size_t i = run.loss_items; i < serial.errors.size(); ++i)
      envelope = std::max(envelope, serial.errors[i]);
    for (size_t i = run.loss_items; i < tolerances.size(); ++i)
      tolerances[i] = std::max(kFp32ToleranceFloor, kFp32ToleranceFactor * envelope);
    v.serial_fp32_error = envelope;
  }
  judge(run, tolerances, v);
  return v;
}

Verification verify_inference_against_serial(const Options& options, const Dataset& dataset,
                                             const std::vector<int64_t>& batch_starts,
                                             const std::vector<double>& losses) {
  const Replay exact = replay_inference<double>(options, dataset, batch_starts);
  const ItemErrors run = item_errors(losses, {}, exact);
  std::vector<double> tolerances(run.errors.size(), kFp64Tolerance);
  Verification v;
  if (options.precision != Precision::fp64) {
    // No training amplifies rounding here: each batch's own serial error is the scale.
    const Replay single = replay_inference<float>(options, dataset, batch_starts);
    const ItemErrors serial = item_errors(single.losses, {}, exact);
    for (size_t i = 0; i < tolerances.size(); ++i) {
      tolerances[i] = std::max(kFp32LossToleranceFloor, kFp32ToleranceFactor * serial.errors[i]);
      v.serial_fp32_error = std::max(v.serial_fp32_error, serial.errors[i]);
    }
  }
  judge(run, tolerances, v);
  return v;
}

}  // namespace mlps
