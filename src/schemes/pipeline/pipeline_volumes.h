#pragma once
// bin/pipeline's communication volumes (docs/pipeline.md), from the layout alone,
// for one rank per training iteration (with `inference`, per forward pass), keyed as the results
// store them: "sendrecv:pipe" every activation of the replica's rows sent to the next virtual
// stage and its gradient sent back, counted on both ends, per boundary between one of the
// rank's virtual stages and a neighbour on another rank; "allreduce:data" (D > 1, training) the
// gradients of the rank's chunks, once.
#include <cstddef>
#include <map>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/schemes/pipeline/pipeline_grid.h"

namespace mlps {

// element_bytes: an activation on the wire; grad_element_bytes: a gradient on the wire.
// `calls`: where given, each kind's calls are added (a message per micro-batch and boundary
// each way; a gradient all-reduce per chunk).
std::map<std::string, double> pipeline_comm_bytes(const ModelConfig& model,
                                                  const PipelineGrid& layout,
                                                  int64_t global_batch, int rank,
                                                  size_t element_bytes,
                                                  size_t grad_element_bytes,
                                                  bool inference = false,
                                                  CommCalls* calls = nullptr);

// Parameters of the virtual stages rank `stage` holds.
int64_t pipeline_rank_parameters(const ModelConfig& model, const PipelineGrid& layout,
                                 int stage);

}  // namespace mlps
