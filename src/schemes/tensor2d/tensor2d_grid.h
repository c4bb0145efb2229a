#pragma once
// The shape of bin/tensor2d's process grid, dp replicas of a q × q grid, resolved from the
// command line and checked against the model before any work.
#include <string>
#include <vector>

#include "src/model/model_config.h"

namespace mlps {

struct Tensor2dGrid {
  int q = 1;   // grid rows = grid columns
  int dp = 1;  // replicas
};

// InputError unless --tp-dims is empty or two equal sizes q,q: an error in the flag itself.
void check_tp_dims_2d(const std::vector<int>& tp_dims);

// From --tp-dims q,q (empty: the square root of the ranks per replica) and --dp (0: the ranks
// left over by the grid). Throws InputError for a non-square grid or a product that is not the
// number of ranks.
Tensor2dGrid resolve_tensor2d_grid(const std::vector<int>& tp_dims, int dp, int world_size);

// Every part of every split must be non-empty (parts may differ by one: balanced_split.h):
// the global batch is split over dp·q (each replica's rows over its q grid rows), S², H
// (hence F = ffn_mult·H) and the classifier's outputs over q. Throws InputError naming the
// dimension that is smaller than its number of parts; returns `shape`.
Tensor2dGrid check_grid_fits(const ModelConfig& model, int64_t global_batch, const Tensor2dGrid& shape);

// "tp-dims=q,q,dp=D"
std::string describe(const Tensor2dGrid& shape);

}  // namespace mlps
