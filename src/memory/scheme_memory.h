#pragma once
// Each scheme's accounting of what its rank holds at the peak (memory_need.h), from the options
// and the grid alone, before anything is allocated. serial, data and pipeline follow their
// allocations exactly (up to bucket padding; ZeRO 2's live gradient buckets, when smaller than
// a unit, are estimated as the largest unit plus two buckets); the tensor-parallel schemes
// count the rank's shard of the parameters (P/T for 1D exactly, P/q² and P/(x·y·z) for 2D and
// 3D) and the activations at their slice widths, so they are approximate (how close:
// docs/memory.md).
#include "src/memory/memory_need.h"
#include "src/options.h"
#include "src/schemes/data/data_parallel_base.h"
#include "src/schemes/pipeline/pipeline_layout.h"
#include "src/schemes/tensor1d/tensor1d_plan.h"
#include "src/schemes/tensor2d/grid_2d.h"
#include "src/schemes/tensor3d/grid_3d.h"
#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

// fuse_update: as asked of SerialTrainer (its dW block where the fused update applies). bf16
// and fp16 are typed storage: 2-byte values and activations, fp32 gradients, statistics and
// optimizer state, and on the CPU the GEMMs' widening scratch (as buffers).
MemoryNeed serial_memory(const Options& o, bool fuse_update);
// What --verify adds on rank 0, in host memory whatever the run's device: the serial replay in
// fp64 (and, unless fp64, in the run's precision after it) on the CPU, and the fp64 copies of the
// parameters it compares (src/driver/verification.cpp), at the largest moment.
double verify_replay_bytes(const Options& o);
MemoryNeed data_memory(const Options& o, int ranks, const DataParallelConfig& config);
MemoryNeed pipeline_memory(const Options& o, const PipelineLayout& layout, int stage);
// The rows and widths of a tensor-parallel rank's activations (its memory counts them; the
// planner prices its element-wise kernels on them).
ActivationSlice tensor1d_activations(const Options& o, const Tensor1dPlan& plan, int dp);
ActivationSlice tensor2d_activations(const Options& o, const GridShape& shape);
ActivationSlice tensor3d_activations(const Options& o, const Shape3d& shape);

MemoryNeed tensor1d_memory(const Options& o, const Tensor1dPlan& plan, int dp);
MemoryNeed tensor2d_memory(const Options& o, const GridShape& shape);
MemoryNeed tensor3d_memory(const Options& o, const Shape3d& shape, const Overlap3d& overlap);

}  // namespace mlps
