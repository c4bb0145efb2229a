#pragma once
// What a 1D tensor-parallel rank holds at its peak (bin/tensor1d): its shard of the parameters (P/T exactly) and its
// activations at their slice widths; approximate (how close: docs/memory.md).
#include "src/memory/memory_need.h"
#include "src/options/options.h"
#include "src/schemes/tensor1d/tensor1d_grid.h"

namespace mlps {

// The rows and widths of the rank's activations (its memory counts them; the planner prices its
// element-wise kernels on them).
ActivationSlice tensor1d_activations(const Options& o, const Tensor1dGrid& plan, int dp);
MemoryNeed tensor1d_memory(const Options& o, const Tensor1dGrid& plan, int dp);

}  // namespace mlps
