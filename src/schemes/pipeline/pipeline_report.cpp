#include "src/schemes/pipeline/pipeline_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "src/base/human_bytes.h"
#include "src/schemes/pipeline/pipeline_simulation.h"

namespace mlps {

void print_pipeline_report(const PipelineGrid& layout, int64_t micro_rows,
                           const PipelineRankReport& mine, MPI_Comm world, bool inference) {
  constexpr int kFields = 9;
  const double values[kFields] = {mine.step_seconds,    mine.bubble_seconds,
                                  mine.bubble_fraction, mine.activation_peak_bytes,
                                  mine.slot_bytes,      mine.working_bytes,
                                  mine.forward_seconds, mine.input_seconds,
                                  mine.weight_seconds};
  int rank = 0, ranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &ranks);
  std::vector<double> all(static_cast<size_t>(kFields) * ranks);
  MPI_Gather(values, kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, world);
  if (rank != 0) return;

  const int p = layout.stages, d = layout.replicas;
  const PipelineShape shape = layout.shape();
  PassTimes times{0, 0, 0};
  std::vector<PassTimes> stage_times(static_cast<size_t>(p), PassTimes{0, 0, 0});
  std::printf("pipeline%s: %d stage%s x %d replica%s (rank = replica*%d + stage), %d micro-batches "
              "of %lld rows, %s%s, partition %s (blocks per stage%s)\n",
              inference ? " inference" : "", p, p == 1 ? "" : "s", d, d == 1 ? "" : "s", p,
              layout.micro_batches, (long long)micro_rows,
              inference ? "forward-only stream" : "schedule ",
              inference ? "" : to_string(layout.schedule), layout.partition.text().c_str(),
              layout.partition_given ? ", --partition" : ", balanced by parameters");
  if (layout.chunks > 1)
    std::printf("  chunks per rank: %d, so %d virtual stages (the partition lists them in model "
                "order)\n",
                layout.chunks, shape.virtual_stages());
  std::printf("  %-5s %-24s %10s %10s %8s %14s %9s\n", "stage", "units", "step ms", "bubble ms",
              "bubble", inference ? "in-flight" : "activations", "micro-");
  std::printf("  %-5s %-24s %10s %10s %8s %14s %9s\n", "", "", "(- data)", "", "", "peak",
              "batches");
  double fraction_sum = 0, working = 0;
  for (int s = 0; s < p; ++s) {
    double step = 0, bubble = 0, fraction = 0, peak = 0, slot = 0;
    for (int r = 0; r < d; ++r) {
      const double* v = all.data() + static_cast<size_t>(layout.rank_of(s, r)) * kFields;
      step += v[0] / d;
      bubble += v[1] / d;
      fraction += v[2] / d;
      peak = std::max(peak, v[3]);
      slot = std::max(slot, v[4]);
      working = std::max(working, v[5]);
      stage_times[s].forward += v[6] / d;
      stage_times[s].input += v[7] / d;
      stage_times[s].weight += v[8] / d;
    }
    std::string units;
    for (int c = 0; c < layout.chunks; ++c)
      units += (c ? " + " : "") + layout.partition.unit_names(shape.virtual_stage(s, c));
    fraction_sum += fraction;
    times.forward += stage_times[s].forward / p;
    times.input += stage_times[s].input / p;
    times.weight += stage_times[s].weight / p;
    std::printf("  %-5d %-24s %10.3f %10.3f %7.1f%% %14s %9.2f\n", s, units.c_str(),
                step * 1e3, bubble * 1e3,
                100.0 * fraction, human_bytes(peak).c_str(), slot > 0 ? peak / slot : 0.0);
  }
  const char* formula[] = {"(P-1)/(M+P-1)", "(P-1)/(M+P-1)", "(P-1)/(v*M+P-1)",
                           layout.micro_batches >= p ? "(P-1)(F+B-W)/((P-1)(F+B-W)+M(F+B+W))"
                                                     : "(its lists simulated with F, B, W)",
                           "(its lists simulated with F, B, W)"};
  const bool timed = splits_backward(layout.schedule) && !inference;
  std::printf("  bubble fraction: measured %.1f%% (mean over stages of bubble / (step - data)), "
              "ideal %s = %.1f%%\n",
              100.0 * fraction_sum / p,
              inference ? "(P-1)/(M+P-1)" : formula[static_cast<int>(layout.schedule)],
              100.0 * (inference ? ideal_bubble_fraction({PipelineScheduleKind::gpipe, p,
                                                          layout.micro_batches, 1})
                                 : ideal_bubble_fraction(shape, times)));
  if (timed)
    std::printf("  pass times per chunk (mean over ranks): F %.3f ms, B %.3f ms, W %.3f ms\n",
                times.forward * 1e3, times.input * 1e3, times.weight * 1e3);
  if (!inference && p > 1) {
    // The schedule's lists with each stage's own pass times: the imbalance between stages
    // included, only communication and contention left out.
    std::vector<std::vector<PipelineAction>> lists;
    for (int s = 0; s < p; ++s) lists.push_back(stage_actions(shape, s));
    const SimulatedPipeline run = simulate_pipeline(shape, lists, stage_times);
    double idle = 0;
    for (double busy : run.busy) idle += run.makespan > 0 ? (1.0 - busy / run.makespan) / p : 0;
    std::printf("  simulated with each stage's own measured pass times (its imbalance "
                "included): %.1f%%\n",
                100.0 * idle);
  }
  if (working > 0)
    std::printf("  plus, shared by a stage's micro-batches: %s at most (%s)\n",
                human_bytes(working).c_str(),
                inference ? "forward scratch; the last stage's losses and softmax of the batch"
                          : "--checkpoint-activations: one block's recompute set and output");
  std::fflush(stdout);
}

}  // namespace mlps
