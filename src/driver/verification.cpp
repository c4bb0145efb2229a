#include "src/driver/verification.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "src/data/shuffle.h"
#include "src/schemes/serial_trainer.h"

namespace mlps {

double verification_tolerance(Precision precision) {
  // fp64 schemes reorder sums at most. fp32 adds rounding of ~1e-7 per operation, which stable
  // training keeps far under 1e-3 for hundreds of steps; unstable training (loss spikes, as the
  // tutorial config at lr 1e-3 has in its first steps) amplifies it by ~10x per step, so there
  // an fp32 run can FAIL against fp64 while being right: verify such runs with --precision fp64.
  return precision == Precision::fp64 ? 1e-10 : 1e-3;
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

Verification verify_against_serial(const Options& options, const Dataset& dataset,
                                   const TrainingSchedule& schedule,
                                   const std::vector<double>& losses,
                                   const std::vector<NamedTensor>& parameters) {
  SerialTrainer<double> reference(DeviceKind::cpu, options.model, options.optimizer, options.seed,
                                  schedule.global_batch);
  PhaseTimer timer(reference.device());
  Verification v;
  v.tolerance = verification_tolerance(options.precision);
  std::vector<int64_t> order;
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    if (it == 0 || schedule.first_position(it) == 0)
      order = epoch_order(schedule.train_samples, options.seed, schedule.epoch_of(it));
    const HostBatch batch = load_batch(dataset, Split::train, order, schedule.first_position(it),
                                       schedule.global_batch,
                                       static_cast<int>(options.model.image_size));
    timer.begin_iteration();
    const double ref = reference.train_step(batch, schedule.global_batch, timer);
    timer.end_iteration();
    const double err = std::abs(losses.at(it) - ref) / std::max(std::abs(ref), 1e-300);
    keep_worst(v, err, "loss at iteration " + std::to_string(it + 1));
  }
  const auto ref_params = reference.gather_parameters();
  if (ref_params.size() != parameters.size())
    throw std::logic_error("verify: scheme gathered " + std::to_string(parameters.size()) +
                           " tensors, the model has " + std::to_string(ref_params.size()));
  for (size_t t = 0; t < ref_params.size(); ++t) {
    if (ref_params[t].values.size() != parameters[t].values.size())
      throw std::logic_error("verify: tensor " + ref_params[t].name + " has the wrong size");
    keep_worst(v, relative_error(parameters[t].values, ref_params[t].values), ref_params[t].name);
  }
  v.verdict = v.max_relative_error <= v.tolerance ? "PASS" : "FAIL";
  return v;
}

}  // namespace mlps
