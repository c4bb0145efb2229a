#pragma once
// What a 3D tensor-parallel rank holds at its peak (bin/tensor3d): its shard of the parameters (about P/(x·y·z)) and its
// activations at their slice widths; approximate (how close: docs/memory.md).
#include "src/memory/memory_need.h"
#include "src/options/options.h"
#include "src/schemes/tensor3d/tensor3d_grid.h"
#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

// The rows and widths of the rank's activations (its memory counts them; the planner prices its
// element-wise kernels on them).
ActivationSlice tensor3d_activations(const Options& o, const Tensor3dGrid& shape);
MemoryNeed tensor3d_memory(const Options& o, const Tensor3dGrid& shape, const Overlap3d& overlap);

}  // namespace mlps
