#pragma once
// What a pipeline stage holds at its peak (bin/pipeline), following PipelineTrainer's
// allocations: its chunks' parameter state, and the micro-batch slots its schedule holds at once.
#include "src/memory/memory_need.h"
#include "src/options/options.h"
#include "src/schemes/pipeline/pipeline_grid.h"

namespace mlps {

MemoryNeed pipeline_memory(const Options& o, const PipelineGrid& layout, int stage);

}  // namespace mlps
