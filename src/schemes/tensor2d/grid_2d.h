#pragma once
// The process grid of bin/tensor2d: dp replicas of a q × q grid, the ProcessGrid (data, rows,
// cols), so world rank d·q² + i·q + j is grid row i, column j of replica d. Communicators (one
// CommLog): "row" (ranked by column j), "col" (ranked by row i) and, with dp > 1, "data".
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "src/comm/make_communicator.h"
#include "src/grid/process_grid.h"
#include "src/model_config.h"

namespace mlps {

struct GridShape {
  int q = 1;   // grid rows = grid columns
  int dp = 1;  // replicas
};

// From --tp-dims q,q (empty: the square root of the ranks per replica) and --dp (0: the ranks
// left over by the grid). Throws InputError for a non-square grid or a product that is not the
// number of ranks.
GridShape resolve_grid_shape(const std::vector<int>& tp_dims, int dp, int world_size);

// Every part of every split must be non-empty (parts may differ by one: balanced_split.h):
// the global batch is split over dp·q (each replica's rows over its q grid rows), S², H
// (hence F = ffn_mult·H) and the classifier's outputs over q. Throws InputError naming the
// dimension that is smaller than its number of parts; returns `shape`.
GridShape check_grid_fits(const ModelConfig& model, int64_t global_batch, const GridShape& shape);

class Grid2d {
 public:
  // Collective over world. The communicators record into `log`.
  Grid2d(const GridShape& shape, CommBackend backend, const Device& device, MPI_Comm world,
         std::shared_ptr<CommLog> log);

  int q() const { return shape_.q; }
  int dp() const { return shape_.dp; }
  int replica() const { return replica_; }
  int row() const { return row_; }     // i
  int column() const { return col_; }  // j
  Communicator& row_comm() { return *row_comm_; }
  Communicator& col_comm() { return *col_comm_; }
  Communicator* data_comm() { return data_comm_.get(); }  // null when dp == 1
  std::string backend() const { return row_comm_->backend(); }  // "mpi" or "nccl"
  MPI_Comm world() const { return grid_.world(); }
  std::string describe() const;  // "tp-dims=q,q,dp=D"

 private:
  GridShape shape_;
  ProcessGrid grid_;
  int replica_ = 0, row_ = 0, col_ = 0;
  std::unique_ptr<Communicator> row_comm_, col_comm_, data_comm_;
};

}  // namespace mlps
