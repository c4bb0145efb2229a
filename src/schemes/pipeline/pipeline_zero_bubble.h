#pragma once
// ZB-V's action lists (Qi et al., "Zero Bubble Pipeline Parallelism": two chunks per rank in a
// V), made by list scheduling with unit pass times: whenever a rank is free it runs, of the
// passes whose inputs are there, a B (the input gradient another rank waits for) first, else a
// forward (the deeper chunk first) while it holds fewer than 2P chunk activations (1F1B's peak:
// P micro-batches of a stage, whose chunks are half a stage), else its oldest deferred W.
#include <vector>

#include "src/schemes/pipeline/pipeline_shape.h"

namespace mlps {

// Every rank's actions (shape.kind zb_v).
std::vector<std::vector<PipelineAction>> zb_v_actions(const PipelineShape& shape);

}  // namespace mlps
