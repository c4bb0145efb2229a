#include "src/driver/inference_driver.h"

#include <cstdio>

#include "src/driver/console_report.h"
#include "src/driver/iteration_recorder.h"
#include "src/driver/run_attributes.h"
#include "src/driver/run_steps.h"
#include "src/driver/training_driver.h"
#include "src/driver/verification.h"
#include "src/errors.h"
#include "src/results/run_info.h"

namespace mlps {

int run_inference(const RunContext& context, const Options& o, Trainer& trainer,
                  const Dataset& dataset) {
  const int64_t test_samples = o.eval_samples > 0
                                   ? std::min(o.eval_samples, dataset.size(Split::test))
                                   : dataset.size(Split::test);
  const int64_t per_pass = test_samples / o.batch;
  if (per_pass == 0)
    throw InputError("--inference: --batch " + std::to_string(o.batch) + " exceeds the " +
                     std::to_string(test_samples) + " test samples");
  const int64_t batches = o.iters > 0 ? o.iters : o.epochs * per_pass;
  if (o.warmup >= batches)
    throw InputError("--warmup " + std::to_string(o.warmup) + " leaves none of the " +
                     std::to_string(batches) + " inference batches to time");
  const std::string out_path = o.out.empty() ? default_result_path(trainer.scheme()) : o.out;
  check_output_path(context, out_path);
  const std::string start_time = utc_timestamp_now();
  if (context.is_root()) {
    std::printf("mlpscale %s --inference\n  scheme      %s, grid %s, %d rank%s, device %s, "
                "precision %s\n  batches     %lld of %lld test samples (%lld per pass over %lld "
                "samples), %lld warm-up\n  output      %s%s\n",
                context.program.c_str(), trainer.scheme().c_str(), trainer.grid().c_str(),
                context.size, context.size == 1 ? "" : "s", to_string(trainer.device().kind()),
                to_string(o.precision), (long long)batches, (long long)o.batch,
                (long long)per_pass, (long long)test_samples, (long long)o.warmup,
                out_path.c_str(), o.verify ? " (with --verify)" : "");
    std::fflush(stdout);
  }

  PhaseTimer timer(trainer.device());
  IterationRecorder recorder(run_timing_names(trainer));
  RunRecord record;
  std::vector<int64_t> batch_starts;
  int64_t correct = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t first = (b % per_pass) * o.batch;
    batch_starts.push_back(first);
    timer.begin_iteration();
    HostBatch batch;
    {
      ScopedPhase phase(timer, Phase::data);
      const BatchSlice slice = trainer.batch_slice(o.batch);
      batch = load_batch_range(dataset, Split::test, first + slice.first, slice.count,
                               static_cast<int>(o.model.image_size));
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

  recorder.gather_into(context, record);
  record.peak_bytes = gather_peak_bytes(context, trainer.device().peak_bytes());
  record.estimated_bytes = gather_peak_bytes(context, static_cast<size_t>(context.estimated_bytes));
  const std::string hosts = host_names(context.comm);
  if (context.is_root()) {
    const double flops = model_flops_per_sample(o.model, true);
    fill_run_attributes(record, context, o, trainer, dataset,
                        {"inference", batches, o.batch, flops, start_time, hosts});
    print_summary(record, batches, o.warmup, o.batch, flops, true);
    std::printf("  accuracy    %.4f over %lld samples (initial weights)\n",
                record.test_accuracy.back(), (long long)(batches * o.batch));
    if (o.verify) {
      std::printf("verify: recomputing %lld batches' forward passes serially on the CPU in fp64%s%s ...\n",
                  (long long)batches, o.precision == Precision::fp64 ? "" : " and in ",
                  o.precision == Precision::fp64 ? "" : to_string(o.precision));
      std::fflush(stdout);
      record.verification = verify_inference_against_serial(o, dataset, batch_starts, record.loss);
      std::printf("verify: %s  relative error %.3e at %s, tolerance there %.1e (batch losses vs "
                  "serial forward passes; the item nearest its tolerance)\n",
                  record.verification.verdict.c_str(), record.verification.max_relative_error,
                  record.verification.worst_at.c_str(), record.verification.tolerance);
    }
  }
  return finish_run(context, out_path, record);
}

}  // namespace mlps
