#include "src/driver/verification.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "src/data/shuffle.h"
#include "src/schemes/serial_trainer.h"

namespace mlps {

double verification_tolerance(Precision precision) {
  // fp64 schemes differ from serial fp64 only in the order of sums.
  return precision == Precision::fp64 ? 1e-10 : kFp32ToleranceFloor;
}

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

// Keeps the worst error and where it was; a NaN sticks, so a run with NaNs can never PASS.
void keep_worst(Verification& v, double err, const std::string& where) {
  if (std::isnan(v.max_relative_error)) return;
  if (std::isnan(err) || err > v.max_relative_error || v.worst_at.empty()) {
    v.max_relative_error = err;
    v.worst_at = where;
  }
}

}  // namespace

namespace {

// The serial model's losses and final weights over the run's iterations, on the CPU in T.
struct Replay {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;
};

template <typename T>
Replay replay_serially(const Options& options, const Dataset& dataset,
                       const TrainingSchedule& schedule) {
  SerialTrainer<T> reference(DeviceKind::cpu, options.model, options.optimizer, options.seed,
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

// Worst relative error of a run against a reference, and where it is.
Verification compare(const std::vector<double>& losses,
                     const std::vector<NamedTensor>& parameters, const Replay& ref) {
  Verification v;
  for (size_t it = 0; it < ref.losses.size(); ++it) {
    const double err =
        std::abs(losses.at(it) - ref.losses[it]) / std::max(std::abs(ref.losses[it]), 1e-300);
    keep_worst(v, err, "loss at iteration " + std::to_string(it + 1));
  }
  if (ref.parameters.size() != parameters.size())
    throw std::logic_error("verify: scheme gathered " + std::to_string(parameters.size()) +
                           " tensors, the model has " + std::to_string(ref.parameters.size()));
  for (size_t t = 0; t < ref.parameters.size(); ++t) {
    if (ref.parameters[t].values.size() != parameters[t].values.size())
      throw std::logic_error("verify: tensor " + ref.parameters[t].name + " has the wrong size");
    keep_worst(v, relative_error(parameters[t].values, ref.parameters[t].values),
               ref.parameters[t].name);
  }
  return v;
}

}  // namespace

Verification verify_against_serial(const Options& options, const Dataset& dataset,
                                   const TrainingSchedule& schedule,
                                   const std::vector<double>& losses,
                                   const std::vector<NamedTensor>& parameters) {
  const Replay exact = replay_serially<double>(options, dataset, schedule);
  Verification v = compare(losses, parameters, exact);
  v.tolerance = verification_tolerance(options.precision);
  if (options.precision == Precision::fp32) {
    // Rounding noise grows with the run (fast where training is unstable), so an fp32 run is
    // held to what serial training in fp32 achieves against the same fp64 reference.
    const Replay single = replay_serially<float>(options, dataset, schedule);
    const Verification serial = compare(single.losses, single.parameters, exact);
    v.serial_fp32_error = serial.max_relative_error;
    v.tolerance = std::max(kFp32ToleranceFloor, kFp32ToleranceFactor * serial.max_relative_error);
  }
  v.verdict = v.max_relative_error <= v.tolerance ? "PASS" : "FAIL";
  return v;
}

}  // namespace mlps
