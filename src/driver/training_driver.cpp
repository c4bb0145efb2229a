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
#include "src/driver/run_timeline.h"
#include "src/driver/verification.h"
#include "src/comm/broadcast_refusal.h"
#include "src/base/publish_file.h"
#include "src/results/run_info.h"

namespace mlps {

void check_output_path(const RunContext& context, const std::string& path,
                       const std::string& flag, const std::string& example) {
  std::string problem;
  if (context.is_root()) {
    namespace fs = std::filesystem;
    const fs::path parent = fs::path(path).parent_path();
    std::error_code error;
    if (!parent.empty()) fs::create_directories(parent, error);
    const std::string probe = path + ".probe." + std::to_string(getpid());
    if (error) {
      problem = flag + " " + path + ": cannot create " + parent.string() + " (" +
                error.message() + ")";
    } else if (fs::is_directory(path, error)) {
      problem = flag + " " + path + " is a directory: name the file (e.g. " +
                (fs::path(path) / example).string() + ")";
    } else if (const std::string target = output_target_problem(path); !target.empty()) {
      problem = flag + " " + target + " (nothing there is touched)";
    } else if (!std::ofstream(probe)) {
      problem = flag + " " + path + ": cannot write in " + (parent.empty() ? "." : parent.string());
    }
    fs::remove(probe, error);
  }
  refuse_together(context.comm, problem, 0);
}

namespace {

// --eval-samples, or the whole test split (never more).
int64_t test_samples(const Options& o, const Dataset& dataset) {
  const int64_t all = dataset.size(Split::test);
  return o.eval_samples > 0 ? std::min(o.eval_samples, all) : all;
}

// --out, or results/<scheme>-<UTC time>-<pid>.h5 (rank 0's clock and pid); checked on every rank.
std::string result_path(const RunContext& context, const Options& o, const Trainer& trainer) {
  std::string path = o.out;
  if (path.empty()) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    path = "results/" + trainer.scheme() + "-" + stamp + "-" + std::to_string(getpid()) + ".h5";
  }
  check_output_path(context, path);
  return path;
}

// Starts the timer's iteration and takes batch `index` from the prefetcher in the data phase.
HostBatch begin_iteration(PhaseTimer& timer, BatchPrefetcher& batches_ahead, int64_t index) {
  timer.begin_iteration();
  const ScopedPhase phase(timer, Phase::data);
  return batches_ahead.take(index);
}

// Collective after the loop: the recorder's tables, every rank's bytes and the hosts into
// record; then rank 0 fills the root attributes every result file carries (results/README.md)
// and prints the summary of `iterations` steps (or inference batches) of `global_batch` samples.
void gather_and_summarise(const RunContext& context, const Options& o, const Trainer& trainer,
                          const Dataset& dataset, const IterationRecorder& recorder,
                          RunRecord& record, int64_t iterations, int64_t global_batch,
                          const std::string& start_time) {
  recorder.gather_into(context, trainer, record);
  const std::string hosts = host_names(context.comm);
  if (!context.is_root()) return;
  const double flops = model_flops_per_sample(o.model, o.inference);
  auto& s = record.string_attributes;
  s["scheme"] = trainer.scheme();
  s["grid"] = trainer.grid();
  s["device"] = to_string(trainer.device().kind());
  s["comm"] = trainer.comm_backend();
  s["precision"] = to_string(o.precision);
  s["grad_comm"] = storage_format(o.precision) == StorageFormat::full || o.fp32_grad_comm
                       ? (o.precision == Precision::fp64 ? "fp64" : "fp32")
                       : to_string(o.precision);
  const bool fp64 = o.precision == Precision::fp64;
  s["gemm_math"] = fp64 ? "fp64" : to_string(trainer.device().gemm_compute());
  s["gemm_call"] = trainer.gemm_call();
  // Mixed precision: 16-bit tensors in 16-bit buffers ("typed") or rounded values in fp32 ones
  // ("emulated"); parameters' gradients are fp32 either way.
  s["storage"] = trainer.storage();
  s["weight_gradients"] = fp64 ? "fp64" : "fp32";
  s["mode"] = o.inference ? "inference" : "train";
  s["data"] = dataset.describe();
  s["config_json"] = o.resolved_json;
  s["command_line"] = context.command_line;
  s["git_commit"] = git_commit();
  s["mpi_version"] = mpi_library_version();
  s["nccl_version"] = nccl_version();
  s["cuda_version"] = cuda_version();
  s["hdf5_version"] = hdf5_library_version();
  s.merge(processor_attributes());
  s["hosts"] = hosts;
  s["start_time"] = start_time;
  auto& n = record.integer_attributes;
  n["world_size"] = context.size;
  n["warmup_iterations"] = o.warmup;
  n["iterations"] = iterations;
  n["parameters"] = trainer.parameter_count();
  n["global_batch"] = global_batch;
  n["checkpoint_activations"] = o.model.checkpoint_activations ? 1 : 0;
  n["flops_per_sample"] = std::llround(flops);
  n["cpu_threads"] = trainer.device().kind() == DeviceKind::cpu ? cpu::thread_count() : 0;
  n["prefetch"] = context.loads_ahead ? 1 : 0;
  print_summary(record, iterations, o.warmup, global_batch, flops, o.inference);
  record.prediction = context.prediction;
  print_prediction(record, o.warmup);
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
int run_inference(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
                  Trainer& trainer, const Dataset& dataset) {
  const int64_t samples = test_samples(o, dataset);
  const TrainingSchedule passes = TrainingSchedule::make(o, samples, Split::test);
  const int64_t per_pass = passes.batches_per_epoch, batches = passes.iterations;
  const std::string out_path = result_path(context, o, trainer);
  PhaseTimer timer(trainer.device());
  RunTimeline timeline(context, o, timer, trainer);
  const std::string start_time = utc_timestamp_now();
  if (context.is_root()) {
    std::printf("mlpscale %s --inference\n  scheme      %s, grid %s, %d rank%s, device %s, "
                "precision %s\n",
                context.program.c_str(), trainer.scheme().c_str(), trainer.grid().c_str(),
                context.size, context.size == 1 ? "" : "s", to_string(trainer.device().kind()),
                to_string(o.precision));
    print_blas_lines();
    std::printf("  batches     %lld of %lld test samples (%lld per pass over %lld samples), %lld "
                "warm-up\n  output      %s%s\n",
                (long long)batches, (long long)o.batch, (long long)per_pass, (long long)samples,
                (long long)o.warmup, out_path.c_str(), o.verify ? " (with --verify)" : "");
    std::fflush(stdout);
  }

  IterationRecorder recorder(trainer);
  RunRecord record;
  std::vector<int64_t> batch_starts;
  int64_t correct = 0;
  const BatchSlice slice = trainer.batch_slice(o.batch);
  BatchPrefetcher batches_ahead(
      [&](int64_t b) {
        return load_batch_range(dataset, Split::test, (b % per_pass) * o.batch + slice.first,
                                slice.count, static_cast<int>(o.model.image_size));
      },
      batches, context.loads_ahead);
  for (int64_t b = 0; b < batches; ++b) {
    batch_starts.push_back((b % per_pass) * o.batch);
    const HostBatch batch = begin_iteration(timer, batches_ahead, b);
    Evaluation e;
    {
      ScopedPhase phase(timer, Phase::forward);
      e = trainer.evaluate(batch, o.batch);
    }
    const std::vector<double> seconds = recorder.end_iteration(timer, trainer);
    record.loss.push_back(e.loss_sum / static_cast<double>(o.batch));
    correct += e.correct;
    if (context.is_root() && o.print_every > 0 &&
        ((b + 1) % o.print_every == 0 || b + 1 == batches))
      std::printf("batch %lld/%lld  loss %.6f  latency %.3f ms\n", (long long)b + 1,
                  (long long)batches, record.loss.back(), seconds[0] * 1e3);
  }
  record.test_accuracy.push_back(static_cast<double>(correct) /
                                 static_cast<double>(batches * o.batch));

  gather_and_summarise(context, o, trainer, dataset, recorder, record, batches, o.batch,
                       start_time);
  if (context.is_root()) {
    std::printf("  accuracy    %.4f over %lld samples (initial weights)\n",
                record.test_accuracy.back(), (long long)(batches * o.batch));
    if (o.verify) verify_run(o, dataset, schedule, batch_starts, {}, record);
  }
  const int code = finish_run(context, out_path, record);
  timeline.write(context, o, trainer);  // after the result: no trace without its result
  return code;
}

}  // namespace

int run_training(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
                 Trainer& trainer, const Dataset& dataset) {
  if (o.inference) return run_inference(context, o, schedule, trainer, dataset);
  const std::string out_path = result_path(context, o, trainer);
  PhaseTimer timer(trainer.device());
  RunTimeline timeline(context, o, timer, trainer);
  const std::string start_time = utc_timestamp_now();
  const int64_t eval_samples = test_samples(o, dataset);
  if (context.is_root()) print_settings_header(context, o, schedule, trainer, dataset, out_path);

  IterationRecorder recorder(trainer);
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
      schedule.iterations, context.loads_ahead);
  // --timeout watches the training loop, where every rank waits on its peers.
  std::optional<HangWatchdog> watchdog(
      std::in_place, o.timeout,
      context.size > 1 ? context.program + " (rank " + std::to_string(context.rank) + ")"
                       : context.program,
      trainer.comm_log());
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    const HostBatch batch = begin_iteration(timer, batches_ahead, it);
    const double loss_scale = trainer.device().loss_scale();
    trainer.train_step(batch, schedule.global_batch, timer);
    record.loss_scale.push_back(loss_scale);
    // fp16 loss scaling halves the scale exactly when it skips a step.
    if (trainer.device().loss_scale() < loss_scale) ++skipped_steps;
    const std::vector<double> seconds = recorder.end_iteration(timer, trainer);
    const double loss = trainer.step_loss();  // read after the step's end
    watchdog->progress();
    record.loss.push_back(loss);
    if (context.is_root() && o.print_every > 0 &&
        ((it + 1) % o.print_every == 0 || it + 1 == schedule.iterations || !std::isfinite(loss)))
      std::printf("iter %lld/%lld  epoch %lld  loss %.6f  step %.3f ms\n", (long long)it + 1,
                  (long long)schedule.iterations, (long long)schedule.epoch_of(it) + 1, loss,
                  seconds[0] * 1e3);
    if (schedule.ends_epoch(it)) {
      const double evaluation_start = TraceRecorder::now();
      const double accuracy = evaluate(o, trainer, dataset, eval_samples);
      timeline.evaluation(evaluation_start);
      watchdog->progress();
      record.test_accuracy.push_back(accuracy);
      if (context.is_root())
        std::printf("epoch %lld  test accuracy %.4f (%lld samples)\n",
                    (long long)schedule.epoch_of(it) + 1, accuracy, (long long)eval_samples);
    }
    if (context.is_root()) std::fflush(stdout);
  }

  watchdog.reset();
  record.integer_attributes["skipped_steps"] = skipped_steps;
  gather_and_summarise(context, o, trainer, dataset, recorder, record, schedule.iterations,
                       schedule.global_batch, start_time);
  std::vector<NamedTensor> parameters;
  if (o.verify) parameters = trainer.gather_parameters();

  if (context.is_root()) {
    if (o.precision == Precision::fp16)
      std::printf("  loss scale  %g at the end, %lld of %lld steps skipped (inf/NaN gradients)\n",
                  trainer.device().loss_scale(), (long long)skipped_steps,
                  (long long)schedule.iterations);
    if (o.verify) verify_run(o, dataset, schedule, {}, parameters, record);
  }
  const int code = finish_run(context, out_path, record);
  timeline.write(context, o, trainer);  // after the result: no trace without its result
  return code;
}

}  // namespace mlps
