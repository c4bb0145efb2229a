#pragma once
// What a 2D tensor-parallel rank holds at its peak (bin/tensor2d): its shard of the parameters (about P/q²) and its
// activations at their slice widths; approximate (how close: docs/memory.md).
#include "src/memory/memory_need.h"
#include "src/options/options.h"
#include "src/schemes/tensor2d/tensor2d_grid.h"

namespace mlps {

// The rows and widths of the rank's activations (its memory counts them; the planner prices its
// element-wise kernels on them).
ActivationSlice tensor2d_activations(const Options& o, const Tensor2dGrid& shape);
MemoryNeed tensor2d_memory(const Options& o, const Tensor2dGrid& shape);

}  // namespace mlps
