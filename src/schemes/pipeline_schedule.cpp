#include "src/schemes/pipeline_schedule.h"

#include <algorithm>

#include "src/errors.h"

namespace mlps {

const char* to_string(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::gpipe ? "gpipe" : "1f1b";
}

PipelineScheduleKind parse_pipeline_schedule(const std::string& text) {
  if (text == "gpipe") return PipelineScheduleKind::gpipe;
  if (text == "1f1b") return PipelineScheduleKind::one_f_one_b;
  throw InputError("--schedule must be gpipe or 1f1b, not '" + text + "'");
}

std::vector<PipelineAction> stage_actions(PipelineScheduleKind kind, int stage, int stages,
                                          int micro_batches) {
  using Pass = PipelineAction::Pass;
  std::vector<PipelineAction> actions;
  const int m = micro_batches;
  if (kind == PipelineScheduleKind::gpipe) {
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

int max_in_flight(PipelineScheduleKind kind, int stage, int stages, int micro_batches) {
  int held = 0, most = 0;
  for (const PipelineAction& a : stage_actions(kind, stage, stages, micro_batches)) {
    held += a.pass == PipelineAction::Pass::forward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

double ideal_bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace mlps
