#pragma once
// The vocabulary of the pipeline's schedules: the schedule's kind and name, the shape of a
// pipeline (P stages, M micro-batches, the chunks each rank holds and where), one pass of a
// micro-batch on a chunk, and the passes' times (pipeline_schedule.h orders the passes;
// pipeline_simulation.h and pipeline_zero_bubble.h run and list-schedule them).
#include <string>
#include <vector>

namespace mlps {

enum class PipelineScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, zb_v };
// "gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"
const char* to_string(PipelineScheduleKind kind);
// Those names, in that order (--schedule's choices, bin/plan's candidates).
std::vector<std::string> pipeline_schedule_names();
// One of the names above; InputError otherwise.
PipelineScheduleKind parse_pipeline_schedule(const std::string& text);
// True for ZB-H1 and ZB-V, whose backward is split into B and W.
bool splits_backward(PipelineScheduleKind kind);

// P ranks (stages), M micro-batches, and the model chunks each rank holds: v for interleaved
// (--virtual-stages), 2 for ZB-V, otherwise 1.
struct PipelineShape {
  PipelineScheduleKind kind = PipelineScheduleKind::one_f_one_b;
  int stages = 1;
  int micro_batches = 1;
  int chunks = 1;
  int virtual_stages() const { return stages * chunks; }
  // The virtual stage (the position of the chunk in the model, 0 .. P·chunks − 1) of a rank's
  // chunk, and the rank and chunk that hold a virtual stage.
  int virtual_stage(int rank, int chunk) const;
  int rank_of(int virtual_stage) const;
  int chunk_of(int virtual_stage) const;
};
// The shape of a schedule; virtual_stages is --virtual-stages (interleaved only).
PipelineShape make_pipeline_shape(PipelineScheduleKind kind, int stages, int micro_batches,
                                  int virtual_stages = 1);

struct PipelineAction {
  // backward: B and W together; backward_input: B alone; backward_weight: W of a B run before.
  enum class Pass { forward, backward, backward_input, backward_weight };
  Pass pass = Pass::forward;
  int micro_batch = 0;
  int chunk = 0;  // of this rank's chunks
  bool operator==(const PipelineAction&) const = default;
};
// True for the action after which a micro-batch's activations on its chunk are freed.
bool releases_activations(const PipelineAction& action);

// Per-chunk times of one micro-batch's forward, B and W (for a full backward, B + W).
struct PassTimes {
  double forward = 1, input = 1, weight = 1;
};

}  // namespace mlps
