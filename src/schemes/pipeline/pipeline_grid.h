#pragma once
// bin/pipeline's process grid, resolved from the command line and checked before any work:
// P stages × D replicas = the ranks, rank = d·P + s (a replica's stages are consecutive ranks,
// so on a multi-GPU node neighbouring stages share the node). Replica d trains on rows
// [d·B/D, (d+1)·B/D) of the global batch B, split into M micro-batches of equal size.
#include <cstdint>
#include <string>

#include "src/grid/process_grid.h"
#include "src/model/model_config.h"
#include "src/schemes/pipeline/pipeline_partition.h"
#include "src/schemes/pipeline/pipeline_schedule.h"
#include "src/schemes/trainer.h"

namespace mlps {

// The pipeline flags as given (0: derived from the world size and the other flag).
struct PipelineOptions {
  int pp = 0;
  int dp = 0;
  int micro_batches = 4;
  std::string schedule = "1f1b";
  int virtual_stages = 1;  // chunks per rank under interleaved 1F1B
  std::string partition;  // blocks per virtual stage, e.g. "1,2,1"; empty: balanced by parameters
};

struct PipelineGrid {
  int stages = 1;         // P
  int replicas = 1;       // D
  int micro_batches = 1;  // M
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
  int chunks = 1;  // model chunks per rank: --virtual-stages (interleaved), 2 (ZB-V), else 1
  // Over the P·chunks virtual stages (PipelineShape::virtual_stage places them on ranks).
  PipelinePartition partition{{0}};
  bool partition_given = false;  // --partition, else balanced

  // The process grid's axes: a replica's stages are consecutive ranks.
  std::vector<GridAxis> axes() const { return {{"data", replicas}, {"pipe", stages}}; }
  int stage_of(int rank) const { return grid_coordinates(axes(), rank)[1]; }
  int replica_of(int rank) const { return grid_coordinates(axes(), rank)[0]; }
  int rank_of(int stage, int replica) const { return grid_rank(axes(), {replica, stage}); }
  // The rows of a global batch of `global_rows` that replica d trains on.
  BatchSlice replica_rows(int64_t global_rows, int replica) const {
    return even_batch_slice(global_rows, replica, replicas);
  }
  PipelineShape shape() const { return {schedule, stages, micro_batches, chunks}; }
  // "pp=4,dp=1,micro_batches=8,schedule=1f1b,partition=1,1,1,1"; interleaved adds
  // ",virtual_stages=v" before the partition, which then lists the P·v virtual stages.
  std::string grid() const;
};

// InputError for what is wrong in the flags whatever the ranks, batch and model: M or v below 1,
// --virtual-stages without --schedule interleaved, a --partition item that is no positive
// integer.
void check_pipeline_flags(const PipelineOptions& options);

// Throws InputError, the same on every rank, when P × D is not the world size, there are more
// virtual stages than blocks, --partition is malformed or does not sum to the blocks, a
// replica has no rows, M does not divide a replica's rows, --virtual-stages is given without
// --schedule interleaved, or interleaved's M is not a multiple of P.
PipelineGrid resolve_pipeline_grid(const PipelineOptions& options, const ModelConfig& model,
                                       int64_t global_batch, int ranks);

}  // namespace mlps
