#pragma once
// What bin/pipeline prints after the driver's summary: per stage its step, bubble and peak
// activation memory, and the measured bubble fraction beside the ideal (P − 1)/(M + P − 1).
#include <mpi.h>

#include <cstdint>

#include "src/schemes/pipeline_layout.h"

namespace mlps {

// One rank's figures: medians over the timed iterations.
struct PipelineRankReport {
  double step_seconds = 0;     // the training step without data loading (step − data)
  double bubble_seconds = 0;   // blocked waiting for a neighbour stage (see PipelineTrainer)
  double bubble_fraction = 0;  // median of bubble / (step − data)
  double activation_peak_bytes = 0;  // most bytes of micro-batch activations held at once
  double slot_bytes = 0;             // one micro-batch's activations on this stage
};

// Collective over world (rank = replica·P + stage); rank 0 prints, per stage (figures averaged
// over the replicas, memory their maximum), then the bubble fraction averaged over stages.
void print_pipeline_report(const PipelineLayout& layout, int64_t micro_rows,
                           const PipelineRankReport& mine, MPI_Comm world);

}  // namespace mlps
