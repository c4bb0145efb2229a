#pragma once
// The order in which one pipeline stage runs the forward and backward passes of the
// micro-batches of a step: GPipe or 1F1B (PipeDream-Flush), as README's pipeline section
// describes them. Both flush at the end of the step, so their bubble is the same; 1F1B only
// needs less activation memory.
#include <string>
#include <vector>

namespace mlps {

enum class PipelineScheduleKind { gpipe, one_f_one_b };
const char* to_string(PipelineScheduleKind kind);  // "gpipe", "1f1b"
// "gpipe" or "1f1b"; InputError otherwise.
PipelineScheduleKind parse_pipeline_schedule(const std::string& text);

struct PipelineAction {
  enum class Pass { forward, backward };
  Pass pass = Pass::forward;
  int micro_batch = 0;
  bool operator==(const PipelineAction&) const = default;
};

// Stage `stage` of `stages`: each micro-batch's forward then backward, 2·micro_batches actions.
std::vector<PipelineAction> stage_actions(PipelineScheduleKind kind, int stage, int stages,
                                          int micro_batches);

// The most micro-batches whose forward has run and whose backward has not, counted along
// stage_actions (so a new schedule brings its own): M for GPipe, min(P − s, M) for 1F1B.
int max_in_flight(PipelineScheduleKind kind, int stage, int stages, int micro_batches);

// The idle fraction of a balanced pipeline with equal micro-batch times: (P − 1)/(M + P − 1).
double ideal_bubble_fraction(int stages, int micro_batches);

}  // namespace mlps
