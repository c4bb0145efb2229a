#pragma once
// The communication of one bin/tensor3d training step, per rank, from the configuration alone.
// Sizes are nccl-tests' (as CommLog records them: all-reduce the message, all-gather the
// gathered output, reduce-scatter the input); the ring bytes a rank sends are that size times
// 2(n−1)/n for all-reduce and (n−1)/n for all-gather and reduce-scatter. With b = B/(D·G_d)
// rows per rank, e bytes per element and, for a Linear(K → N) whose input is sharded over a
// group of g_in ranks and output over g_out (normal: inner, outer; transposed: swapped; the
// pixels are sharded over outer, so the embed is transposed), n = ⌈N/g_out⌉ (the classifier
// is padded), block = n·(K/g_in):
//   allgather:depth       block·e, forward and again in backward (not with --cache-weights)
//   allreduce:<in group>  b·n·e           the partial outputs
//   allreduce:<out group> b·(K/g_in)·e    dX (not for the embed)
//   reduce_scatter:depth  block·e         dW
// LayerNorm over a group of g: allgather 2b·g·e (row moments), allreduce 2b·e (backward sums);
// the logits: allgather over the classifier's output group (g) b·⌈10/g⌉·g·e; vector gradients
// allreduce:depth (their local elements)·e; with D > 1 allreduce:data of every local element.
// Groups of one rank communicate nothing.
// With checkpoint_activations every block's forward runs again before its backward (layers
// "<block>.<part> (recompute)"): its LayerNorm all-gather 2b·g·e and each block Linear's
// forward all-reduce b·n·e again, and fc1's all-gather:depth block·e again unless
// --cache-weights (the recompute's gather of the block's last Linear, fc2 or a plain block's
// fc, serves its backward, which follows at once: that Linear gathers no more than before).
// Inference (a forward pass alone): one allgather:depth per Linear, the forward all-reduces,
// the LayerNorm all-gathers and the logits; no dX, dW, LayerNorm backward or gradients.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "src/model_config.h"
#include "src/schemes/tensor3d/grid_3d.h"

namespace mlps {

struct Volume3d {
  std::string layer;  // "embed", "block0.fc1", "block0.norm", "logits", "gradients"
  std::string kind;   // "allgather:depth", ...
  int group_size = 1;
  double bytes = 0;   // nccl-tests size
  double ring_bytes() const;  // bytes a rank sends on a ring
};

// This rank's parameter elements: its weight shards (block/G_d per Linear) and vector slices
// (each bias, γ and β split over its group, the classifier's padded): what the gradient
// all-reduces carry and the memory accounting holds.
struct Local3d {
  double weights = 0, vectors = 0;
};
Local3d tensor3d_local_elements(const ModelConfig& model, const Shape3d& shape);

// One training step's, or with `inference` one forward pass's.
std::vector<Volume3d> tensor3d_layer_volumes(const ModelConfig& model, int64_t global_batch,
                                             const Shape3d& shape, size_t element_bytes,
                                             bool cache_weights, bool inference);
// Summed per kind (the keys of the result file's /comm groups).
std::map<std::string, double> tensor3d_volumes(const std::vector<Volume3d>& layers);

}  // namespace mlps
