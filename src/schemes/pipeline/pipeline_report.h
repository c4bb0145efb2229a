#pragma once
// What bin/pipeline prints after the driver's summary: per stage its step, bubble and peak
// activation memory, and the measured bubble fraction beside the ideal (P − 1)/(M + P − 1).
// With --inference the same table covers the forward-only stream of evaluate().
#include <mpi.h>

#include <cstdint>

#include "src/schemes/pipeline/pipeline_grid.h"

namespace mlps {

// One rank's figures: medians over the timed iterations.
struct PipelineRankReport {
  double step_seconds = 0;     // the training step without data loading (step − data)
  double bubble_seconds = 0;   // blocked waiting for a neighbour stage (see PipelineTrainer)
  double bubble_fraction = 0;  // median of bubble / (step − data)
  double activation_peak_bytes = 0;  // most bytes of micro-batch activations held at once
  double slot_bytes = 0;             // one micro-batch's activations on this stage
  // Shared by the micro-batches, outside the two figures above: checkpointing's recompute set
  // (training), the forward scratch and the last stage's batch results (inference).
  double working_bytes = 0;
  // One pass of one chunk, mean over the timed steps: forward, B (a whole backward when the
  // schedule does not split it) and W.
  double forward_seconds = 0, input_seconds = 0, weight_seconds = 0;
};

// Collective over world (rank = replica·P + stage); rank 0 prints, per stage (figures averaged
// over the replicas, memory their maximum), then the bubble fraction averaged over stages.
// inference: the figures are evaluate()'s (PipelineTrainer::report(warmup, true)).
void print_pipeline_report(const PipelineGrid& layout, int64_t micro_rows,
                           const PipelineRankReport& mine, MPI_Comm world,
                           bool inference = false);

}  // namespace mlps
