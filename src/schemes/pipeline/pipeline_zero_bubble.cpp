#include "src/schemes/pipeline/pipeline_zero_bubble.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>

namespace mlps {

std::vector<std::vector<PipelineAction>> zb_v_actions(const PipelineShape& shape) {
  using Pass = PipelineAction::Pass;
  const int ranks = shape.stages, chunks = shape.chunks, m = shape.micro_batches;
  const int vs_count = shape.virtual_stages();
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  // End times (unit passes) per (virtual stage, micro-batch) of the forward and of B.
  std::vector<double> forward_end(static_cast<size_t>(vs_count) * m, kNotYet);
  std::vector<double> input_end(forward_end);
  auto at = [&](std::vector<double>& v, int vs, int mb) -> double& {
    return v[static_cast<size_t>(vs) * m + mb];
  };
  // Per virtual stage, the next micro-batch to run forward and B (each in micro-batch order).
  std::vector<int> next_forward(static_cast<size_t>(vs_count), 0), next_input(next_forward);
  std::vector<double> free_at(static_cast<size_t>(ranks), 0.0);
  std::vector<int> held(static_cast<size_t>(ranks), 0);
  std::vector<int> left(static_cast<size_t>(ranks), 3 * m * chunks);  // passes still to run
  std::vector<std::deque<PipelineAction>> deferred(static_cast<size_t>(ranks));
  std::vector<std::vector<PipelineAction>> lists(static_cast<size_t>(ranks));
  // 1F1B's peak activation memory: P micro-batches of a stage, 2P of a chunk (half a stage).
  const int budget = 2 * ranks;

  for (;;) {
    // The free rank with work left that is earliest (the lowest index among equals) decides.
    int r = -1;
    for (int q = 0; q < ranks; ++q)
      if (left[q] > 0 && (r < 0 || free_at[q] < free_at[r])) r = q;
    if (r < 0) break;
    const double now = free_at[r];
    // The chunks, deepest virtual stage first.
    std::vector<int> order(static_cast<size_t>(chunks));
    for (int c = 0; c < chunks; ++c) order[c] = c;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return shape.virtual_stage(r, a) > shape.virtual_stage(r, b);
    });
    std::optional<PipelineAction> pick;
    int best_mb = m;
    for (int c : order) {  // B: the earliest micro-batch whose output gradient is there
      const int vs = shape.virtual_stage(r, c), mb = next_input[vs];
      if (mb >= m || mb >= next_forward[vs] || mb >= best_mb) continue;
      if (vs + 1 < vs_count && at(input_end, vs + 1, mb) > now) continue;
      pick = PipelineAction{Pass::backward_input, mb, c};
      best_mb = mb;
    }
    if (!pick && held[r] < budget)
      for (int c : order) {  // a forward whose input is there, deepest first
        const int vs = shape.virtual_stage(r, c), mb = next_forward[vs];
        if (mb >= m || (vs > 0 && at(forward_end, vs - 1, mb) > now)) continue;
        pick = PipelineAction{Pass::forward, mb, c};
        break;
      }
    if (!pick && !deferred[r].empty()) {
      pick = deferred[r].front();
      deferred[r].pop_front();
    }
    if (!pick) {  // idle until the next pass anywhere ends
      double wake = kNotYet;
      for (double end : forward_end)
        if (end > now && end < wake) wake = end;
      for (double end : input_end)
        if (end > now && end < wake) wake = end;
      // Another rank free at the same time may yet act: try again a unit later.
      if (wake == kNotYet) wake = now + 1;
      if (wake > 4.0 * vs_count * m * 3) throw std::logic_error("zero_bubble_actions: deadlock");
      free_at[r] = wake;
      continue;
    }
    const int vs = shape.virtual_stage(r, pick->chunk);
    free_at[r] = now + 1;
    --left[r];
    lists[r].push_back(*pick);
    if (pick->pass == Pass::forward) {
      at(forward_end, vs, pick->micro_batch) = free_at[r];
      ++next_forward[vs];
      ++held[r];
    } else if (pick->pass == Pass::backward_input) {
      at(input_end, vs, pick->micro_batch) = free_at[r];
      ++next_input[vs];
      deferred[r].push_back({Pass::backward_weight, pick->micro_batch, pick->chunk});
    } else {
      --held[r];
    }
  }
  return lists;
}

}  // namespace mlps
