#pragma once
// The shape of bin/tensor3d's process grid: --tp-dims x,y,z gives G_r = x (outer), G_c = y
// (inner), G_d = z (depth) × --dp D replicas, resolved and checked against the model before any
// work.
#include <string>
#include <vector>

#include "src/model/model_config.h"

namespace mlps {

struct Tensor3dGrid {
  int outer = 1;  // G_r
  int inner = 1;  // G_c
  int depth = 1;  // G_d
  int dp = 1;     // D
  int tensor_ranks() const { return outer * inner * depth; }
  std::string dims() const;  // "x,y,z"
  std::string describe() const;  // "tp-dims=x,y,z,dp=D"
};

// InputError unless --tp-dims is empty or three sizes x,y,z: an error in the flag itself.
void check_tp_dims_3d(const std::vector<int>& tp_dims);

// From --tp-dims x,y,z (empty: ranks/dp,1,1) and --dp (0: ranks left over). Throws
// InputError for other than three dims or a product that is not the number of ranks.
Tensor3dGrid resolve_tensor3d_grid(const std::vector<int>& tp_dims, int dp, int world_size);

// Which group shards an activation's features.
enum class ShardAxis { inner, outer };
inline ShardAxis other(ShardAxis a) {
  return a == ShardAxis::inner ? ShardAxis::outer : ShardAxis::inner;
}

// The layout walk of FC_Net: the input pixels are sharded over outer; each Linear's output is
// sharded over the other axis than its input; LayerNorm and residuals keep the layout.
// Returns the axis sharding the classifier's input.
ShardAxis classifier_input_axis(const ModelConfig& model);

// Every split must divide what it splits (the batch by D·G_d, S² by G_r, H and F by G_r and
// G_c, each weight block by G_d; the classifier's outputs are padded to a multiple of their
// group). Throws InputError naming the dimension, identical on every rank; returns `shape`.
Tensor3dGrid check_shape_divides(const ModelConfig& model, int64_t global_batch, const Tensor3dGrid& shape);

}  // namespace mlps
