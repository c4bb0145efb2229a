#pragma once
// The communication of one bin/tensor3d training step (with `inference`, of one forward pass),
// per rank and layer, from the configuration alone: nccl-tests sizes as CommLog records them
// (all-reduce the message, all-gather the gathered output, reduce-scatter the input). The
// formulas, with checkpointing's and inference's, are docs/tensor3d.md's.
// Groups of one rank communicate nothing.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "src/comm/comm_volume_report.h"
#include "src/model/model_config.h"
#include "src/schemes/tensor3d/tensor3d_grid.h"

namespace mlps {

struct Volume3d {
  std::string layer;  // "embed", "block0.fc1", "block0.norm", "logits", "gradients"
  std::string kind;   // "allgather:depth", ...
  int group_size = 1;
  double bytes = 0;   // nccl-tests size
  int calls = 1;      // the collectives carrying them (W gathered twice; weights and vectors)
  double ring_bytes() const;  // bytes a rank sends on a ring
};

// This rank's parameter elements: its weight shards (block/G_d per Linear) and vector slices
// (each bias, γ and β split over its group, the classifier's padded): what the gradient
// all-reduces carry and the memory accounting holds.
struct Local3d {
  double weights = 0, vectors = 0;
};
Local3d tensor3d_local_elements(const ModelConfig& model, const Tensor3dGrid& shape);

// One training step's, or with `inference` one forward pass's.
std::vector<Volume3d> tensor3d_layer_volumes(const ModelConfig& model, int64_t global_batch,
                                             const Tensor3dGrid& shape, size_t element_bytes,
                                             bool cache_weights, bool inference);
// Summed per kind (the keys of the result file's /comm groups); `calls`, where given, gets
// their calls.
std::map<std::string, double> tensor3d_volumes(const std::vector<Volume3d>& layers,
                                               CommCalls* calls = nullptr);

}  // namespace mlps
