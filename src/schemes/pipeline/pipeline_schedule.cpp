#include "src/schemes/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <map>
#include <utility>

#include "src/base/errors.h"
#include "src/schemes/pipeline/pipeline_simulation.h"
#include "src/schemes/pipeline/pipeline_zero_bubble.h"

namespace mlps {

namespace {

using Kind = PipelineScheduleKind;
using Pass = PipelineAction::Pass;

// GPipe and 1F1B: one chunk per rank.
std::vector<PipelineAction> one_chunk_actions(Kind kind, int stage, int stages, int m) {
  std::vector<PipelineAction> actions;
  if (kind == Kind::gpipe) {
    for (int i = 0; i < m; ++i) actions.push_back({Pass::forward, i});
    for (int i = 0; i < m; ++i) actions.push_back({Pass::backward, i});
    return actions;
  }
  const int warmup = std::min(stages - stage - 1, m);
  for (int i = 0; i < warmup; ++i) actions.push_back({Pass::forward, i});
  for (int i = 0; i < m - warmup; ++i) {
    actions.push_back({Pass::forward, warmup + i});
    actions.push_back({Pass::backward, i});
  }
  for (int i = m - warmup; i < m; ++i) actions.push_back({Pass::backward, i});
  return actions;
}

// ZB-H1: 1F1B with each backward split into B and W, stage s deferring its first s W's to the
// end, where they fill the time 1F1B's cool-down waits for gradients: every stage then idles
// only P − 1 passes, all in the warm-up, and holds at most P micro-batches (1F1B's stage 0).
std::vector<PipelineAction> zb_h1_actions(int stage, int stages, int m) {
  const int warmup = std::min(stages - stage - 1, m), deferred = std::min(stage, m);
  std::vector<PipelineAction> actions;
  int next_weight = 0;
  auto input_then_weight = [&](int i) {
    actions.push_back({Pass::backward_input, i});
    if (i >= deferred) actions.push_back({Pass::backward_weight, next_weight++});
  };
  for (int i = 0; i < warmup; ++i) actions.push_back({Pass::forward, i});
  for (int i = 0; i < m - warmup; ++i) {
    actions.push_back({Pass::forward, warmup + i});
    input_then_weight(i);
  }
  for (int i = m - warmup; i < m; ++i) input_then_weight(i);
  while (next_weight < m) actions.push_back({Pass::backward_weight, next_weight++});
  return actions;
}

// Megatron's interleaved 1F1B: the k-th forward of a rank runs micro-batch
// (k / Pv)·P + k % P on chunk (k % Pv) / P; the k-th backward the same micro-batch on the
// mirrored chunk. A warm-up of 2(P − s − 1) + (v − 1)P forwards, then one forward one
// backward, then the remaining backwards.
std::vector<PipelineAction> interleaved_actions(int stage, int stages, int m, int v) {
  const int group = stages * v, total = m * v;
  auto item = [&](int k, bool forward) {
    const int in_group = k % group;
    const int chunk = in_group / stages;
    return PipelineAction{forward ? Pass::forward : Pass::backward,
                          (k / group) * stages + in_group % stages,
                          forward ? chunk : v - 1 - chunk};
  };
  const int warmup = std::min(2 * (stages - stage - 1) + (v - 1) * stages, total);
  std::vector<PipelineAction> actions;
  for (int k = 0; k < warmup; ++k) actions.push_back(item(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    actions.push_back(item(warmup + k, true));
    actions.push_back(item(k, false));
  }
  for (int k = total - warmup; k < total; ++k) actions.push_back(item(k, false));
  return actions;
}

}  // namespace

std::vector<PipelineAction> stage_actions(const PipelineShape& shape, int stage) {
  switch (shape.kind) {
    case Kind::gpipe:
    case Kind::one_f_one_b:
      return one_chunk_actions(shape.kind, stage, shape.stages, shape.micro_batches);
    case Kind::interleaved:
      return interleaved_actions(stage, shape.stages, shape.micro_batches, shape.chunks);
    case Kind::zb_h1:
      return zb_h1_actions(stage, shape.stages, shape.micro_batches);
    case Kind::zb_v:
      return zb_v_actions(shape)[static_cast<size_t>(stage)];
  }
  return {};
}

bool transfers_arrive_in_order(const PipelineShape& shape) {
  struct Transfer {
    int virtual_stage;  // the receiving one
    bool gradient;
    int micro_batch;
    bool operator==(const Transfer&) const = default;
  };
  const int last = shape.virtual_stages() - 1;
  // Per (from rank, to rank): the transfers in the sender's order, and in the receiver's.
  std::map<std::pair<int, int>, std::vector<Transfer>> sent, wanted;
  for (int rank = 0; rank < shape.stages; ++rank)
    for (const PipelineAction& a : stage_actions(shape, rank)) {
      if (a.pass == Pass::backward_weight) continue;  // W moves nothing
      const int vs = shape.virtual_stage(rank, a.chunk), m = a.micro_batch;
      if (a.pass == Pass::forward) {
        if (vs > 0 && shape.rank_of(vs - 1) != rank)  // its input, at the action's start
          wanted[{shape.rank_of(vs - 1), rank}].push_back({vs, false, m});
        if (vs < last && shape.rank_of(vs + 1) != rank)  // its output, at the end
          sent[{rank, shape.rank_of(vs + 1)}].push_back({vs + 1, false, m});
      } else {
        if (vs < last && shape.rank_of(vs + 1) != rank)  // its output's gradient
          wanted[{shape.rank_of(vs + 1), rank}].push_back({vs, true, m});
        if (vs > 0 && shape.rank_of(vs - 1) != rank)  // its input's gradient
          sent[{rank, shape.rank_of(vs - 1)}].push_back({vs - 1, true, m});
      }
    }
  return sent == wanted;
}

int max_in_flight(const PipelineShape& shape, int stage) {
  int held = 0, most = 0;
  for (const PipelineAction& a : stage_actions(shape, stage)) {
    if (a.pass == Pass::forward) ++held;
    if (releases_activations(a)) --held;
    most = std::max(most, held);
  }
  return most;
}

double ideal_bubble_fraction(const PipelineShape& shape, const PassTimes& t) {
  const double p = shape.stages, m = shape.micro_batches;
  switch (shape.kind) {
    case Kind::gpipe:
    case Kind::one_f_one_b:
      return (p - 1) / (m + p - 1);
    case Kind::interleaved:
      return (p - 1) / (shape.chunks * m + p - 1);
    case Kind::zb_h1:
      if (m >= p) {
        const double bubble = (p - 1) * std::max(0.0, t.forward + t.input - t.weight);
        return bubble / (bubble + m * (t.forward + t.input + t.weight));
      }
      [[fallthrough]];  // fewer micro-batches than stages: no W to fill the bubble with
    case Kind::zb_v: {  // no closed form: the lists themselves, simulated
      std::vector<std::vector<PipelineAction>> lists;
      for (int s = 0; s < shape.stages; ++s) lists.push_back(stage_actions(shape, s));
      const SimulatedPipeline run = simulate_pipeline(shape, lists, t);
      return 1.0 - run.busy[0] / run.makespan;
    }
  }
  return 0;
}

}  // namespace mlps
