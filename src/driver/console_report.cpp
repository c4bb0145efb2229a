#include "src/driver/console_report.h"

#include <algorithm>
#include <cstdio>

#include "kernels/cpu/blas_core.h"
#include "src/comm/comm_log.h"
#include "src/base/human_bytes.h"
#include "src/timing/step_statistics.h"

namespace mlps {

void print_blas_lines() {
  const cpu::BlasInfo blas = cpu::blas_info();
  std::printf("  blas        %s\n", blas.summary().c_str());
  std::printf("  processor   %s\n", blas.processor_line().c_str());
  if (!blas.notice.empty()) std::printf("  notice      %s\n", blas.notice.c_str());
}

void print_settings_header(const RunContext& context, const Options& o,
                           const TrainingSchedule& schedule, const Trainer& trainer,
                           const Dataset& dataset, const std::string& out_path) {
  const ModelConfig& m = o.model;
  std::printf("mlpscale %s\n", context.program.c_str());
  std::printf("  scheme      %s, grid %s, %d rank%s\n", trainer.scheme().c_str(),
              trainer.grid().c_str(), context.size, context.size == 1 ? "" : "s");
  std::string device = to_string(trainer.device().kind());
  if (trainer.device().kind() == DeviceKind::cpu) {
    const int threads = cpu::thread_count();
    device += " (" + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
              " per rank)";
  }
  const bool mixed = storage_format(o.precision) != StorageFormat::full;
  const std::string storage = mixed ? " in " + trainer.storage() + " 16-bit storage" : "";
  std::printf("  device      %s, precision %s%s%s%s\n", device.c_str(), to_string(o.precision),
              storage.c_str(),
              mixed ? (o.fp32_grad_comm ? " (weight gradients on the wire in fp32)"
                                        : " (16-bit values on the wire)")
                    : "",
              o.model.checkpoint_activations ? ", activation checkpointing" : "");
  if (trainer.device().kind() == DeviceKind::cuda)
    std::printf("  gemm        %s\n", trainer.gemm_call().c_str());
  print_blas_lines();
  std::printf("  model       FC_Net: image %lldx%lld, hidden %lld, %lld %s blocks (ffn %lld), "
              "%lld parameters\n",
              (long long)m.image_size, (long long)m.image_size, (long long)m.hidden,
              (long long)m.layers, m.block == BlockKind::plain ? "plain" : "mlp",
              (long long)m.ffn_hidden(), (long long)trainer.parameter_count());
  std::printf("  data        %s, %lld training samples, global batch %lld, %s (--prefetch %s)\n",
              dataset.describe().c_str(), (long long)schedule.train_samples,
              (long long)schedule.global_batch,
              context.loads_ahead ? "loaded ahead on a thread" : "loaded in the data phase",
              to_string(o.prefetch));
  std::printf("  training    %lld iterations (%lld per epoch), %lld warm-up, %s lr %g, seed %llu\n",
              (long long)schedule.iterations, (long long)schedule.batches_per_epoch,
              (long long)o.warmup, o.optimizer.kind == OptimizerKind::adam ? "adam" : "sgd",
              o.optimizer.lr, (unsigned long long)o.seed);
  if (context.largest_estimated_bytes > 0)
    std::printf("  memory      about %s per rank at the peak (the largest rank's accounting)%s\n",
                human_bytes(context.largest_estimated_bytes).c_str(),
                (context.disk_bytes > 0
                     ? ", and " + human_bytes(context.disk_bytes) + " of state on disk"
                     : std::string())
                    .append(context.host_bytes > 0
                                ? ", " + human_bytes(context.host_bytes) + " in host memory"
                                : std::string())
                    .c_str());
  std::printf("  output      %s%s\n", out_path.c_str(), o.verify ? " (with --verify)" : "");
  std::fflush(stdout);
}

namespace {

// The most any rank asked of its device in one timed step (/counters): a steady-state step
// allocates nothing and, on a GPU, synchronises the host once.
void print_step_counts(const RunRecord& record, int64_t warmup) {
  const auto most = [&](const char* name) {
    double m = 0;
    const IterationRankTable& t = record.counters.at(name);
    for (int64_t i = warmup * t.ranks; i < t.iterations * t.ranks; ++i)
      m = std::max(m, t.values[i]);
    return static_cast<long long>(m);
  };
  if (!record.counters.contains("allocations")) return;
  std::printf("  per step    %lld allocations, %lld frees", most("allocations"), most("frees"));
  if (record.counters.contains("launches"))
    std::printf(", %lld launches, %lld host syncs (runtime's count)", most("launches"),
                most("host_syncs"));
  std::printf("  (most on a rank, timed steps)\n");
}

}  // namespace

void print_summary(const RunRecord& record, int64_t iterations, int64_t warmup,
                   int64_t global_batch, double flops_per_sample, bool inference) {
  const StepSummary s =
      summarise_steps(record.timing.at("step"), warmup, global_batch, flops_per_sample);
  const char* unit = inference ? "batches" : "iterations";
  const double step = s.median_step_seconds;
  std::printf("summary: %lld timed %s (%lld warm-up excluded), slowest rank of each\n",
              (long long)(iterations - warmup), unit, (long long)warmup);
  std::printf("  %-14s %12s %8s\n", "phase", "median ms", "share");
  double phases_total = 0;
  for (const char* phase : {"forward", "backward", "optimizer", "data"}) {
    const double t = median_slowest(record.timing.at(phase), warmup);
    phases_total += t;
    std::printf("  %-14s %12.3f %7.1f%%\n", phase, t * 1e3, 100.0 * t / step);
  }
  const double recompute = median_slowest(record.timing.at("recompute"), warmup);
  if (recompute > 0)
    std::printf("  %-14s %12.3f %7.1f%%   (activation checkpointing, inside backward)\n",
                "recompute", recompute * 1e3, 100.0 * recompute / step);
  if (const auto wait = record.timing.find("offload_wait"); wait != record.timing.end()) {
    // The state on disk is read and written once an update: its bytes over the update's time.
    const double t = median_slowest(wait->second, warmup);
    const double update = median_slowest(record.timing.at("optimizer"), warmup);
    const double moved = record.disk_bytes.empty()
                             ? 0.0
                             : 2.0 * static_cast<double>(*std::max_element(
                                         record.disk_bytes.begin(), record.disk_bytes.end()));
    char disk[160] = "";
    if (moved > 0)
      std::snprintf(disk, sizeof disk, "; %s read and written, %.2f GB/s over the update",
                    human_bytes(moved).c_str(), update > 0 ? moved / update / 1e9 : 0.0);
    std::printf("  %-14s %12.3f %7.1f%%   (the update blocked on %s, inside optimizer%s)\n",
                "offload wait", t * 1e3, 100.0 * t / step,
                record.timing.count("host_update") ? "its copies and scratch file"
                                                   : "its scratch file",
                disk);
  }
  if (const auto host = record.timing.find("host_update"); host != record.timing.end()) {
    const double t = median_slowest(host->second, warmup);
    std::printf("  %-14s %12.3f %7.1f%%   (the CPU's update of the offloaded state, inside "
                "optimizer)\n", "host update", t * 1e3, 100.0 * t / step);
  }
  if (const auto fetch = record.timing.find("param_fetch"); fetch != record.timing.end()) {
    const double t = median_slowest(fetch->second, warmup);
    std::printf("  %-14s %12.3f %7.1f%%   (the offloaded parameters' unit shards brought back, "
                "inside forward and backward)\n", "param fetch", t * 1e3, 100.0 * t / step);
  }
  const auto exposed_it = record.timing.find("exposed_comm");
  const double exposed =
      exposed_it == record.timing.end() ? 0.0 : median_slowest(exposed_it->second, warmup);
  std::printf("  %-14s %12.3f %7.1f%%   (blocked in communication calls, inside the phases)\n",
              "exposed comm", exposed * 1e3, 100.0 * exposed / step);
  const double other = step - phases_total;
  std::printf("  %-14s %12.3f %7.1f%%   (step − phases: host work and waits outside them)\n",
              "other", other * 1e3, 100.0 * other / step);
  std::printf("  %s median %.3f ms, p95 %.3f ms\n",
              inference ? "latency per batch" : "step time  ", step * 1e3,
              s.p95_step_seconds * 1e3);
  std::printf("  throughput  %.1f samples/s, %.4f TFLOP/s (%.4g model flops per sample)\n",
              s.samples_per_second, s.tflops, flops_per_sample);
  std::printf("  split       compute %.1f%%, exposed communication %.1f%%%s\n",
              100.0 * (phases_total - exposed) / step, 100.0 * exposed / step,
              record.comm.empty() ? " (no collectives in this scheme)" : "");
  print_step_counts(record, warmup);
  if (record.comm.empty()) {
    std::fflush(stdout);
    return;
  }
  // Bandwidths as nccl-tests defines them, each over its own communicator's size. The first
  // column as wide as the longest key ("reduce_scatter:data").
  int width = 14;
  for (const auto& entry : record.comm)
    width = std::max(width, static_cast<int>(entry.first.size()));
  std::printf("  %-*s %12s %12s %10s %10s\n", width, "collective", "MB/iter", "ms/iter",
              "algbw GB/s", "busbw GB/s");
  for (const auto& [kind, comm] : record.comm) {
    const double t = median_slowest(comm.time_seconds, warmup);
    const double bytes = median_slowest(comm.bytes, warmup);
    const double algbw = t > 0 ? bytes / t / 1e9 : 0.0;
    const double busbw =
        algbw * bus_bandwidth_factor(comm_kind_of(comm.kind), static_cast<int>(comm.group_size));
    std::printf("  %-*s %12.3f %12.3f %10.3f %10.3f\n", width, kind.c_str(), bytes / 1e6,
                t * 1e3, algbw, busbw);
  }
  std::fflush(stdout);
}

namespace {

// The pipeline's bubble as its report measures it: per rank the median over the timed
// iterations of bubble / (step − data), averaged over the ranks.
double measured_bubble_fraction(const RunRecord& record, int64_t warmup) {
  const IterationRankTable& bubble = record.timing.at("bubble");
  const IterationRankTable& step = record.timing.at("step");
  const IterationRankTable& data = record.timing.at("data");
  double sum = 0;
  for (int64_t r = 0; r < bubble.ranks; ++r) {
    std::vector<double> fractions;
    for (int64_t i = warmup; i < bubble.iterations; ++i) {
      const size_t at = static_cast<size_t>(i * bubble.ranks + r);
      const double busy = step.values[at] - data.values[at];
      fractions.push_back(busy > 0 ? bubble.values[at] / busy : 0.0);
    }
    sum += fractions.empty() ? 0.0 : median(fractions);
  }
  return bubble.ranks > 0 ? sum / static_cast<double>(bubble.ranks) : 0.0;
}

}  // namespace

void print_prediction(const RunRecord& record, int64_t warmup) {
  const RecordedPrediction& p = record.prediction;
  if (p.machine.empty()) return;
  auto slowest = [&](const char* phase) {
    const auto it = record.timing.find(phase);
    return it == record.timing.end() ? 0.0 : median_slowest(it->second, warmup);
  };
  auto row = [](const char* what, double predicted, double measured, double scale) {
    const double error = measured > 0 ? 100.0 * (predicted - measured) / measured : 0.0;
    std::printf("  %-14s %12.3f %12.3f %+9.1f%%\n", what, predicted * scale, measured * scale,
                error);
  };
  std::printf("prediction: %s (%s)%s\n", p.machine_file.c_str(), p.machine.c_str(),
              p.oversubscribed ? ", more ranks than its ranks per node (time-shared cores)" : "");
  std::printf("  %-14s %12s %12s %10s\n", "", "predicted", "measured", "error");
  row("step ms", p.figures.at("step_seconds"), slowest("step"), 1e3);
  row("exposed comm ms", p.figures.at("exposed_comm_seconds"), slowest("exposed_comm"), 1e3);
  if (record.timing.count("bubble"))
    row("bubble %", p.figures.at("bubble_fraction"), measured_bubble_fraction(record, warmup), 1e2);
  const double peak = record.peak_bytes.empty()
                          ? 0.0
                          : static_cast<double>(*std::max_element(record.peak_bytes.begin(),
                                                                  record.peak_bytes.end()));
  row("peak memory MB", p.figures.at("peak_bytes"), peak, 1e-6);
  std::fflush(stdout);
}

}  // namespace mlps
