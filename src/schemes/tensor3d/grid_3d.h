#pragma once
// The process grid of bin/tensor3d: --tp-dims x,y,z gives G_r = x (outer), G_c = y (inner),
// G_d = z (depth) × --dp D replicas, the ProcessGrid (data, depth, outer, inner). Communicators
// (one CommLog): "inner", "outer", "depth" and "data", each ranked by its own coordinate.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "src/comm/make_communicator.h"
#include "src/grid/process_grid.h"
#include "src/model_config.h"

namespace mlps {

struct Shape3d {
  int outer = 1;  // G_r
  int inner = 1;  // G_c
  int depth = 1;  // G_d
  int dp = 1;     // D
  int tensor_ranks() const { return outer * inner * depth; }
  std::string dims() const;  // "x,y,z"
};

// From --tp-dims x,y,z (empty: ranks/dp,1,1) and --dp (0: ranks left over). Throws
// InputError for other than three dims or a product that is not the number of ranks.
Shape3d resolve_shape_3d(const std::vector<int>& tp_dims, int dp, int world_size);

// Which group shards an activation's features.
enum class ShardAxis { inner, outer };

// The layout walk of FC_Net: the input pixels are sharded over outer; each Linear's output is
// sharded over the other axis than its input; LayerNorm and residuals keep the layout.
// Returns the axis sharding the classifier's input.
ShardAxis classifier_input_axis(const ModelConfig& model);

// Every split must divide what it splits (the batch by D·G_d, S² by G_r, H and F by G_r and
// G_c, each weight block by G_d; the classifier's outputs are padded to a multiple of their
// group). Throws InputError naming the dimension, identical on every rank; returns `shape`.
Shape3d check_shape_divides(const ModelConfig& model, int64_t global_batch, const Shape3d& shape);

class Grid3d {
 public:
  // Collective over world. The communicators record into `log`.
  Grid3d(const Shape3d& shape, CommBackend backend, const Device& device, MPI_Comm world,
         std::shared_ptr<CommLog> log);

  const Shape3d& shape() const { return shape_; }
  int r() const { return r_; }
  int c() const { return c_; }
  int d() const { return d_; }
  int replica() const { return replica_; }
  Communicator& inner() { return *inner_; }
  Communicator& outer() { return *outer_; }
  Communicator& depth() { return *depth_; }
  Communicator& data() { return *data_; }
  Communicator& axis(ShardAxis a) { return a == ShardAxis::inner ? *inner_ : *outer_; }
  std::string backend() const { return inner_->backend(); }
  MPI_Comm world() const { return grid_.world(); }
  std::string describe() const;  // "tp-dims=x,y,z,dp=D"

 private:
  Shape3d shape_;
  ProcessGrid grid_;
  int r_ = 0, c_ = 0, d_ = 0, replica_ = 0;
  std::unique_ptr<Communicator> inner_, outer_, depth_, data_;
};

}  // namespace mlps
