#pragma once
// The order in which one pipeline rank runs the passes of a step's micro-batches, as data: an
// action list per rank (docs/pipeline.md). GPipe and 1F1B (PipeDream-Flush) run one
// chunk of the model per rank; interleaved 1F1B (Megatron) v chunks, rank r holding virtual
// stages r, r + P, ...; ZB-V two, in a V (rank r holds virtual stages r and 2P − 1 − r). The
// zero-bubble schedules ZB-H1 and ZB-V split each backward into B (the input gradient) and W
// (the weight gradient) and run W where a rank would otherwise wait.
#include <string>
#include <vector>

namespace mlps {

enum class PipelineScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, zb_v };
// "gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"
const char* to_string(PipelineScheduleKind kind);
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

// Rank `stage`'s actions: every (chunk, micro-batch)'s forward and backward (or B and W).
std::vector<PipelineAction> stage_actions(const PipelineShape& shape, int stage);

// The most micro-batch activations (one chunk's each) held at once along stage_actions:
// M for GPipe, min(P − s, M) for 1F1B, min(P, M) for ZB-H1 (its deferred W's keep theirs),
// the warm-up plus one for interleaved, 2P for ZB-V.
int max_in_flight(const PipelineShape& shape, int stage);

// True when, between any two ranks and in each direction, a step's transfers (activations
// forward, their gradients back) are wanted by the receiver, action by action, in the order the
// sender's actions send them. NCCL's point-to-point calls carry no tag and match in call order,
// so it carries exactly these schedules (MPI tags each stream). All are but ZB-V with more
// micro-batches than stages: rank s sends virtual stage s's activations and virtual stage
// 2P − 1 − s's input gradients to rank s + 1 on one link, which wants them in another order.
bool transfers_arrive_in_order(const PipelineShape& shape);

// Per-chunk times of one micro-batch's forward, B and W (for a full backward, B + W).
struct PassTimes {
  double forward = 1, input = 1, weight = 1;
};
// The idle fraction of a rank in a balanced pipeline, by the schedule's formula:
// GPipe, 1F1B (P − 1)/(M + P − 1); interleaved (P − 1)/(v·M + P − 1); ZB-H1 a bubble of
// (P − 1)(F + B − W) beside M(F + B + W) of work (M ≥ P). ZB-V, list-scheduled, and ZB-H1
// with M < P have no closed form: their own lists, run with these times on the model of
// pipeline_simulation.h.
double ideal_bubble_fraction(const PipelineShape& shape, const PassTimes& times = {});

}  // namespace mlps
