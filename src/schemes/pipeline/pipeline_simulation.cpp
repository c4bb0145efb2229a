#include "src/schemes/pipeline/pipeline_simulation.h"

#include <algorithm>

namespace mlps {

SimulatedPipeline simulate_pipeline(const PipelineShape& shape,
                                    const std::vector<std::vector<PipelineAction>>& actions,
                                    const PassTimes& times) {
  return simulate_pipeline(shape, actions,
                           std::vector<PassTimes>(static_cast<size_t>(shape.stages), times));
}

SimulatedPipeline simulate_pipeline(const PipelineShape& shape,
                                    const std::vector<std::vector<PipelineAction>>& actions,
                                    const std::vector<PassTimes>& rank_times) {
  using Pass = PipelineAction::Pass;
  const int ranks = shape.stages, vs_count = shape.virtual_stages(), m = shape.micro_batches;
  constexpr double kNotYet = -1;
  // End times per (virtual stage, micro-batch): forward, and input gradient (B or backward).
  std::vector<double> forward_end(static_cast<size_t>(vs_count) * m, kNotYet);
  std::vector<double> input_grad_end(forward_end);
  auto at = [&](std::vector<double>& v, int vs, int mb) -> double& {
    return v[static_cast<size_t>(vs) * m + mb];
  };
  SimulatedPipeline sim;
  sim.busy.assign(static_cast<size_t>(ranks), 0.0);
  std::vector<double> free_at(static_cast<size_t>(ranks), 0.0);
  std::vector<size_t> next(static_cast<size_t>(ranks), 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int r = 0; r < ranks; ++r) {
      while (next[r] < actions[r].size()) {
        const PipelineAction& a = actions[r][next[r]];
        const int vs = shape.virtual_stage(r, a.chunk);
        const PassTimes& times = rank_times[r];
        double start = free_at[r];
        double duration = times.weight;
        if (a.pass == Pass::forward) {
          if (vs > 0) {
            const double ready = at(forward_end, vs - 1, a.micro_batch);
            if (ready == kNotYet) break;
            start = std::max(start, ready);
          }
          duration = times.forward;
        } else if (a.pass != Pass::backward_weight) {
          if (vs + 1 < vs_count) {
            const double ready = at(input_grad_end, vs + 1, a.micro_batch);
            if (ready == kNotYet) break;
            start = std::max(start, ready);
          }
          duration = a.pass == Pass::backward ? times.input + times.weight : times.input;
        }
        free_at[r] = start + duration;
        sim.busy[r] += duration;
        if (a.pass == Pass::forward) at(forward_end, vs, a.micro_batch) = free_at[r];
        else if (a.pass != Pass::backward_weight)
          at(input_grad_end, vs, a.micro_batch) = free_at[r];
        ++next[r];
        progressed = true;
      }
    }
  }
  for (int r = 0; r < ranks; ++r) sim.deadlocked |= next[r] < actions[r].size();
  sim.makespan = *std::max_element(free_at.begin(), free_at.end());
  return sim;
}

}  // namespace mlps
