#pragma once
// Statistics of the timed iterations (warm-up excluded). A step's time is the slowest rank's:
// the step is not done until every rank is.
#include <cstdint>
#include <vector>

#include "src/timing/iteration_table.h"

namespace mlps {

double median(std::vector<double> values);
double percentile(std::vector<double> values, double fraction);  // nearest rank

// Per timed iteration, the maximum over ranks of a [iterations × ranks] table; and their median.
std::vector<double> slowest_rank_per_iteration(const IterationRankTable& table, int64_t warmup);
inline double median_slowest(const IterationRankTable& table, int64_t warmup) {
  return median(slowest_rank_per_iteration(table, warmup));
}

struct StepSummary {
  double median_step_seconds = 0;
  double p95_step_seconds = 0;
  double samples_per_second = 0;
  double tflops = 0;  // model flops (model_flops_per_sample × samples) at the median step
};

StepSummary summarise_steps(const IterationRankTable& step, int64_t warmup, int64_t global_batch,
                            double flops_per_sample);

}  // namespace mlps
