#include "src/driver/training_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "kernels/kernels.h"
#include "src/data/batch_prefetcher.h"
#include "src/data/shuffle.h"
#include "src/driver/console_report.h"
#include "src/driver/hang_watchdog.h"
#include "src/driver/iteration_recorder.h"
#include "src/driver/run_attributes.h"
#include "src/driver/verification.h"
#include "src/errors.h"
#include "src/results/run_info.h"

namespace mlps {

void check_output_path(const RunContext& context, const std::string& path) {
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

namespace {

// results/<scheme>-<UTC time>-<pid>.h5 (rank 0's clock and pid).
std::string default_result_path(const std::string& scheme) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return "results/" + scheme + "-" + stamp + "-" + std::to_string(getpid()) + ".h5";
}

// --eval-samples, or the whole test split (never more).
int64_t test_samples(const Options& o, const Dataset& dataset) {
  const int64_t all = dataset.size(Split::test);
  return o.eval_samples > 0 ? std::min(o.eval_samples, all) : all;
}

// --out or default_result_path, checked on every rank.
std::string result_path(const RunContext& context, const Options& o, const Trainer& trainer) {
  const std::string path = o.out.empty() ? default_result_path(trainer.scheme()) : o.out;
  check_output_path(context, path);
  return path;
}

// Every phase, "exposed_comm", then the scheme's extra timings: one value each per iteration.
std::vector<std::string> run_timing_names(const Trainer& trainer) {
  std::vector<std::string> names = phase_names();
  names.push_back("exposed_comm");
  for (const auto& name : trainer.extra_timing_names()) names.push_back(name);
  return names;
}

// Ends the timer's iteration and records it with the trainer's blocked time, extra timings and
// communication totals; returns the iteration's timings (step first).
std::vector<double> record_iteration(PhaseTimer& timer, Trainer& trainer,
                                     IterationRecorder& recorder) {
  std::vector<double> seconds = timer.end_iteration();
  seconds.push_back(trainer.take_blocked_comm_seconds());
  for (double extra : trainer.take_extra_timings()) seconds.push_back(extra);
  recorder.add(seconds, trainer.take_comm_totals());
  return seconds;
}

// Collective after the loop: the recorder's tables and every rank's peak and estimated bytes
// into record on rank 0; returns the hosts of the run.
std::string gather_run(const RunContext& context, const Trainer& trainer,
                       const IterationRecorder& recorder, RunRecord& record) {
  recorder.gather_into(context, record);
  const auto gather = [&](int64_t mine) {
    std::vector<int64_t> all(context.size);
    MPI_Gather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, 0, context.comm);
    return all;
  };
  record.peak_bytes = gather(static_cast<int64_t>(trainer.device().peak_bytes()));
  record.estimated_bytes = gather(static_cast<int64_t>(context.estimated_bytes));
  return host_names(context.comm);
}

// --verify's announcement of what it recomputes, and its verdict on what it `compared`.
void print_verify_start(const Options& o, const std::string& what) {
  const bool fp64 = o.precision == Precision::fp64;
  std::printf("verify: recomputing %s serially on the CPU in fp64%s%s ...\n", what.c_str(),
              fp64 ? "" : " and in ", fp64 ? "" : to_string(o.precision));
  std::fflush(stdout);
}

void print_verdict(const Verification& v, const char* compared) {
  std::printf("verify: %s  relative error %.3e at %s, tolerance there %.1e (%s; the item nearest "
              "its tolerance)\n",
              v.verdict.c_str(), v.max_relative_error, v.worst_at.c_str(), v.tolerance, compared);
}

// Rank 0 writes the result file; returns on every rank 0, or 3 when verification failed.
int finish_run(const RunContext& context, const std::string& out_path, const RunRecord& record) {
  int exit_code = 0;
  if (context.is_root()) {
    if (record.verification.verdict == "FAIL") exit_code = 3;
    write_results_hdf5(out_path, record);
    std::printf("results: %s\n", out_path.c_str());
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, context.comm);
  return exit_code;
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

// --inference: forward passes only (no backward, no optimizer) over the test split with the
// initial weights, each batch timed like a training step; the result file has the training
// file's layout with mode "inference", a row per batch, /train/loss the batch's mean loss and
// /train/test_accuracy the accuracy over every batch. Batch b covers test rows
// [(b mod n)·B, (b mod n + 1)·B), n = ⌊test samples / B⌋ (a partial last batch is dropped so
// every batch has B rows); --iters batches, or --epochs passes.
int run_inference(const RunContext& context, const Options& o, Trainer& trainer,
                  const Dataset& dataset) {
  const int64_t samples = test_samples(o, dataset);
  const int64_t per_pass = samples / o.batch;
  if (per_pass == 0)
    throw InputError("--inference: --batch " + std::to_string(o.batch) + " exceeds the " +
                     std::to_string(samples) + " test samples");
  const int64_t batches = o.iters > 0 ? o.iters : o.epochs * per_pass;
  if (o.warmup >= batches)
    throw InputError("--warmup " + std::to_string(o.warmup) + " leaves none of the " +
                     std::to_string(batches) + " inference batches to time");
  const std::string out_path = result_path(context, o, trainer);
  const std::string start_time = utc_timestamp_now();
  if (context.is_root()) {
    std::printf("mlpscale %s --inference\n  scheme      %s, grid %s, %d rank%s, device %s, "
                "precision %s\n  batches     %lld of %lld test samples (%lld per pass over %lld "
                "samples), %lld warm-up\n  output      %s%s\n",
                context.program.c_str(), trainer.scheme().c_str(), trainer.grid().c_str(),
                context.size, context.size == 1 ? "" : "s", to_string(trainer.device().kind()),
                to_string(o.precision), (long long)batches, (long long)o.batch,
                (long long)per_pass, (long long)samples, (long long)o.warmup,
                out_path.c_str(), o.verify ? " (with --verify)" : "");
    std::fflush(stdout);
  }

  PhaseTimer timer(trainer.device());
  IterationRecorder recorder(run_timing_names(trainer));
  RunRecord record;
  std::vector<int64_t> batch_starts;
  int64_t correct = 0;
  const BatchSlice slice = trainer.batch_slice(o.batch);
  BatchPrefetcher batches_ahead(
      [&](int64_t b) {
        return load_batch_range(dataset, Split::test, (b % per_pass) * o.batch + slice.first,
                                slice.count, static_cast<int>(o.model.image_size));
      },
      batches);
  for (int64_t b = 0; b < batches; ++b) {
    batch_starts.push_back((b % per_pass) * o.batch);
    timer.begin_iteration();
    HostBatch batch;
    {
      ScopedPhase phase(timer, Phase::data);
      batch = batches_ahead.take(b);
    }
    Evaluation e;
    {
      ScopedPhase phase(timer, Phase::forward);
      e = trainer.evaluate(batch, o.batch);
    }
    const std::vector<double> seconds = record_iteration(timer, trainer, recorder);
    record.loss.push_back(e.loss_sum / static_cast<double>(o.batch));
    correct += e.correct;
    if (context.is_root() && o.print_every > 0 && ((b + 1) % o.print_every == 0 || b + 1 == batches))
      std::printf("batch %lld/%lld  loss %.6f  latency %.3f ms\n", (long long)b + 1,
                  (long long)batches, record.loss.back(), seconds[0] * 1e3);
  }
  record.test_accuracy.push_back(static_cast<double>(correct) /
                                 static_cast<double>(batches * o.batch));

  const std::string hosts = gather_run(context, trainer, recorder, record);
  if (context.is_root()) {
    const double flops = model_flops_per_sample(o.model, true);
    fill_run_attributes(record, context, o, trainer, dataset,
                        {"inference", batches, o.batch, flops, start_time, hosts});
    print_summary(record, batches, o.warmup, o.batch, flops, true);
    std::printf("  accuracy    %.4f over %lld samples (initial weights)\n",
                record.test_accuracy.back(), (long long)(batches * o.batch));
    if (o.verify) {
      print_verify_start(o, std::to_string(batches) + " batches' forward passes");
      record.verification = verify_inference_against_serial(o, dataset, batch_starts, record.loss);
      print_verdict(record.verification, "batch losses vs serial forward passes");
    }
  }
  return finish_run(context, out_path, record);
}

}  // namespace

int run_training(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
                 Trainer& trainer, const Dataset& dataset) {
  if (o.inference) return run_inference(context, o, trainer, dataset);
  const std::string out_path = result_path(context, o, trainer);
  const std::string start_time = utc_timestamp_now();
  const int64_t eval_samples = test_samples(o, dataset);
  std::string device_name = to_string(trainer.device().kind());
  if (trainer.device().kind() == DeviceKind::cpu) {
    const int threads = cpu::thread_count();
    device_name += " (" + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
                   " per rank)";
  }
  if (context.is_root())
    print_settings_header(context, o, schedule, trainer.scheme(), trainer.grid(), device_name,
                          dataset.describe(), trainer.parameter_count(), out_path);

  PhaseTimer timer(trainer.device());
  IterationRecorder recorder(run_timing_names(trainer));
  RunRecord record;
  int64_t skipped_steps = 0;
  const BatchSlice slice = trainer.batch_slice(schedule.global_batch);
  std::vector<int64_t> order;  // the loader's: the sample order of the epoch it is in
  int64_t order_epoch = -1;
  BatchPrefetcher batches_ahead(
      [&](int64_t it) {
        if (schedule.epoch_of(it) != order_epoch) {
          order_epoch = schedule.epoch_of(it);
          order = epoch_order(schedule.train_samples, o.seed, order_epoch);
        }
        return load_batch(dataset, Split::train, order, schedule.first_position(it) + slice.first,
                          slice.count, static_cast<int>(o.model.image_size));
      },
      schedule.iterations);
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
      batch = batches_ahead.take(it);
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
  const std::string hosts = gather_run(context, trainer, recorder, record);
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
      print_verify_start(o, std::to_string(schedule.iterations) + " iterations");
      record.verification = verify_against_serial(o, dataset, schedule, record.loss, parameters);
      print_verdict(record.verification, "losses and final weights vs serial fp64");
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
