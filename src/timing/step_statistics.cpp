#include "src/timing/step_statistics.h"

#include <algorithm>
#include <cmath>

namespace mlps {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::vector<double> slowest_rank_per_iteration(const IterationRankTable& table, int64_t warmup) {
  std::vector<double> slowest;
  for (int64_t i = warmup; i < table.iterations; ++i) {
    const double* row = table.values.data() + i * table.ranks;
    slowest.push_back(*std::max_element(row, row + table.ranks));
  }
  return slowest;
}

StepSummary summarise_steps(const IterationRankTable& step, int64_t warmup, int64_t global_batch,
                            double flops_per_sample) {
  const auto steps = slowest_rank_per_iteration(step, warmup);
  StepSummary s;
  s.median_step_seconds = median(steps);
  s.p95_step_seconds = percentile(steps, 0.95);
  if (s.median_step_seconds > 0) {
    s.samples_per_second = static_cast<double>(global_batch) / s.median_step_seconds;
    s.tflops = flops_per_sample * s.samples_per_second / 1e12;
  }
  return s;
}

}  // namespace mlps
