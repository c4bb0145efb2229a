#pragma once
// The order in which one pipeline rank runs the passes of a step's micro-batches, as data: an
// action list per rank (docs/pipeline.md). GPipe and 1F1B (PipeDream-Flush) run one
// chunk of the model per rank; interleaved 1F1B (Megatron) v chunks, rank r holding virtual
// stages r, r + P, ...; ZB-V two, in a V (rank r holds virtual stages r and 2P − 1 − r). The
// zero-bubble schedules ZB-H1 and ZB-V split each backward into B (the input gradient) and W
// (the weight gradient) and run W where a rank would otherwise wait.
#include <vector>

#include "src/schemes/pipeline/pipeline_shape.h"

namespace mlps {

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

// The idle fraction of a rank in a balanced pipeline, by the schedule's formula:
// GPipe, 1F1B (P − 1)/(M + P − 1); interleaved (P − 1)/(v·M + P − 1); ZB-H1 a bubble of
// (P − 1)(F + B − W) beside M(F + B + W) of work (M ≥ P). ZB-V, list-scheduled, and ZB-H1
// with M < P have no closed form: their own lists, run with these times on the model of
// pipeline_simulation.h.
double ideal_bubble_fraction(const PipelineShape& shape, const PassTimes& times = {});

}  // namespace mlps
