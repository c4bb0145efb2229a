#include "src/driver/training_driver.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "src/data/shuffle.h"
#include "src/driver/console_report.h"
#include "src/driver/hang_watchdog.h"
#include "src/driver/inference_driver.h"
#include "src/driver/iteration_recorder.h"
#include "src/driver/run_attributes.h"
#include "src/driver/run_steps.h"
#include "src/driver/verification.h"
#include "src/errors.h"
#include "src/results/run_info.h"

namespace mlps {

std::string default_result_path(const std::string& scheme) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return "results/" + scheme + "-" + stamp + "-" + std::to_string(getpid()) + ".h5";
}

namespace {

// Rank 0 proves it can create the result file's directory and write there, before any training
// time is spent; every rank gets the same verdict, so a bad --out fails everywhere at once.
void check_output_writable(const RunContext& context, const std::string& path) {
  std::string problem;
  if (context.is_root()) {
    namespace fs = std::filesystem;
    const fs::path parent = fs::path(path).parent_path();
    std::error_code error;
    if (!parent.empty()) fs::create_directories(parent, error);
    const std::string probe = path + ".probe." + std::to_string(getpid());
    if (error) {
      problem = "--out " + path + ": cannot create " + parent.string() + " (" + error.message() + ")";
    } else if (fs::is_directory(path, error)) {
      problem = "--out " + path + " is a directory: name the result file (e.g. " +
                (fs::path(path) / "run.h5").string() + ")";
    } else if (!std::ofstream(probe)) {
      problem = "--out " + path + ": cannot write in " + (parent.empty() ? "." : parent.string());
    }
    fs::remove(probe, error);
  }
  int length = static_cast<int>(problem.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, context.comm);
  problem.resize(static_cast<size_t>(length));
  MPI_Bcast(problem.data(), length, MPI_CHAR, 0, context.comm);
  if (!problem.empty()) throw InputError(problem);
}

double evaluate(const Options& o, Trainer& trainer, const Dataset& dataset, int64_t samples) {
  int64_t correct = 0;
  for (int64_t first = 0; first < samples; first += o.batch) {
    const int64_t rows = std::min(o.batch, samples - first);
    const BatchSlice slice = trainer.batch_slice(rows);
    const HostBatch batch = load_batch_range(dataset, Split::test, first + slice.first, slice.count,
                                             static_cast<int>(o.model.image_size));
    correct += trainer.evaluate(batch, rows).correct;
  }
  return static_cast<double>(correct) / static_cast<double>(samples);
}

}  // namespace

std::vector<int64_t> gather_peak_bytes(const RunContext& context, size_t peak) {
  const auto mine = static_cast<int64_t>(peak);
  std::vector<int64_t> all(context.size);
  MPI_Gather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, 0, context.comm);
  return all;
}

void check_output_path(const RunContext& context, const std::string& path) {
  check_output_writable(context, path);
}

int run_training(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
                 Trainer& trainer, const Dataset& dataset) {
  if (o.inference) return run_inference(context, o, trainer, dataset);
  const std::string out_path = o.out.empty() ? default_result_path(trainer.scheme()) : o.out;
  check_output_writable(context, out_path);
  const std::string start_time = utc_timestamp_now();
  const int64_t eval_samples = o.eval_samples > 0
                                   ? std::min(o.eval_samples, dataset.size(Split::test))
                                   : dataset.size(Split::test);
  const std::string device_name = to_string(trainer.device().kind());
  if (context.is_root())
    print_settings_header(context, o, schedule, trainer.scheme(), trainer.grid(), device_name,
                          dataset.describe(), trainer.parameter_count(), out_path);

  PhaseTimer timer(trainer.device());
  IterationRecorder recorder(run_timing_names(trainer));
  RunRecord record;
  int64_t skipped_steps = 0;
  std::vector<int64_t> order;
  // --timeout watches the training loop, where every rank waits on its peers.
  std::optional<HangWatchdog> watchdog;
  watchdog.emplace(o.timeout,
                   context.size > 1
                       ? context.program + " (rank " + std::to_string(context.rank) + ")"
                       : context.program,
                   trainer.comm_log());
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    timer.begin_iteration();
    HostBatch batch;
    {
      ScopedPhase phase(timer, Phase::data);
      if (it == 0 || schedule.first_position(it) == 0)
        order = epoch_order(schedule.train_samples, o.seed, schedule.epoch_of(it));
      const BatchSlice slice = trainer.batch_slice(schedule.global_batch);
      batch = load_batch(dataset, Split::train, order, schedule.first_position(it) + slice.first,
                         slice.count, static_cast<int>(o.model.image_size));
    }
    const double loss_scale = trainer.device().loss_scale();
    const double loss = trainer.train_step(batch, schedule.global_batch, timer);
    record.loss_scale.push_back(loss_scale);
    // fp16 loss scaling halves the scale exactly when it skips a step.
    if (trainer.device().loss_scale() < loss_scale) ++skipped_steps;
    const std::vector<double> seconds = record_iteration(timer, trainer, recorder);
    watchdog->progress();
    record.loss.push_back(loss);
    if (context.is_root() && o.print_every > 0 &&
        ((it + 1) % o.print_every == 0 || it + 1 == schedule.iterations || !std::isfinite(loss)))
      print_progress(it, schedule, loss, seconds[0]);
    if (schedule.ends_epoch(it)) {
      const double accuracy = evaluate(o, trainer, dataset, eval_samples);
      watchdog->progress();
      record.test_accuracy.push_back(accuracy);
      if (context.is_root()) print_evaluation(schedule.epoch_of(it), accuracy, eval_samples);
    }
  }

  watchdog.reset();
  recorder.gather_into(context, record);
  record.peak_bytes = gather_peak_bytes(context, trainer.device().peak_bytes());
  record.estimated_bytes = gather_peak_bytes(context, static_cast<size_t>(context.estimated_bytes));
  const std::string hosts = host_names(context.comm);
  std::vector<NamedTensor> parameters;
  if (o.verify) parameters = trainer.gather_parameters();

  if (context.is_root()) {
    const double flops = model_flops_per_sample(o.model, false);
    fill_run_attributes(record, context, o, trainer, dataset,
                        {"train", schedule.iterations, schedule.global_batch, flops, start_time,
                         hosts});
    record.integer_attributes["skipped_steps"] = skipped_steps;
    print_summary(record, schedule.iterations, o.warmup, schedule.global_batch, flops, false);
    if (o.precision == Precision::fp16)
      std::printf("  loss scale  %g at the end, %lld of %lld steps skipped (inf/NaN gradients)\n",
                  trainer.device().loss_scale(), (long long)skipped_steps,
                  (long long)schedule.iterations);
    if (o.verify) {
      std::printf("verify: recomputing %lld iterations serially on the CPU in fp64%s%s ...\n",
                  (long long)schedule.iterations, o.precision == Precision::fp64 ? "" : " and in ",
                  o.precision == Precision::fp64 ? "" : to_string(o.precision));
      std::fflush(stdout);
      record.verification = verify_against_serial(o, dataset, schedule, record.loss, parameters);
      std::printf("verify: %s  relative error %.3e at %s, tolerance there %.1e (losses and "
                  "final weights vs serial fp64; the item nearest its tolerance)\n",
                  record.verification.verdict.c_str(), record.verification.max_relative_error,
                  record.verification.worst_at.c_str(), record.verification.tolerance);
      if (o.precision != Precision::fp64)
        std::printf("verify: %s tolerances are %.0f x the largest error serial %s itself shows "
                    "against fp64 so far (at least %.0e for losses, %.0e for tensors; over the run "
                    "%.3e)\n",
                    to_string(o.precision), kFp32ToleranceFactor, to_string(o.precision),
                    kFp32LossToleranceFloor, kFp32ToleranceFloor,
                    record.verification.serial_fp32_error);
    }
  }
  return finish_run(context, out_path, record);
}

}  // namespace mlps
