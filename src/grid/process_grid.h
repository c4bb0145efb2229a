#pragma once
// The one process grid of every scheme: named axes, outermost first, and one rank order for all
// of them: rank = Σ coordinate(a)·stride(a), the last axis fastest, as picotron's
// arange(world).view(dp, pp, tp). Each scheme names its axes ("data" always outermost):
//   bin/data      data, shard                     (ZeRO-3's groups of --shard-group consecutive
//                                                  ranks; one group of all ranks but for HSDP)
//   bin/pipeline  data, pipe                      (a replica's stages are consecutive ranks)
//   bin/tensor1d  data, tensor
//   bin/tensor2d  data, rows, cols                (q × q)
//   bin/tensor3d  data, depth, outer, inner       (G_d, G_r, G_c)
// An axis's group is the ranks that differ only in that axis, ranked by their coordinate on it:
// one MPI communicator per axis (for metrics and gathers), and communicators of either backend
// made from it on request.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/make_communicator.h"

namespace mlps {

struct GridAxis {
  std::string name;
  int size = 1;
};

// The rank order as arithmetic, for code that places other ranks than its own (a pipeline
// layout's rank of a stage, the memory each rank will need): rank → one coordinate per axis,
// and back.
std::vector<int> grid_coordinates(const std::vector<GridAxis>& axes, int rank);
int grid_rank(const std::vector<GridAxis>& axes, const std::vector<int>& coordinates);
// Grid dimensions as the flags spell them: "2,2,1".
std::string dims_text(const std::vector<int>& dims);

class ProcessGrid {
 public:
  // Collective over world. The sizes' product must be world's size (std::logic_error otherwise:
  // each scheme refuses a bad shape as an InputError before building its grid).
  ProcessGrid(std::vector<GridAxis> axes, MPI_Comm world);
  ~ProcessGrid();
  ProcessGrid(const ProcessGrid&) = delete;
  ProcessGrid& operator=(const ProcessGrid&) = delete;

  int coordinate(const std::string& axis) const { return coordinates_[index(axis)]; }
  MPI_Comm world() const { return world_; }
  // The ranks that differ only in `axis`, ranked by their coordinate on it.
  MPI_Comm group(const std::string& axis) const { return groups_[index(axis)]; }
  // A communicator over group(axis), named `name` in the CommLog and the results, carrying
  // `role`'s traffic (its wire format). Collective over world (every rank asks for the same
  // axes in the same order).
  std::unique_ptr<Communicator> communicator(const std::string& axis, CommBackend backend,
                                             const Device& device, const std::string& name,
                                             std::shared_ptr<CommLog> log,
                                             CommRole role = CommRole::activations) const;

 private:
  size_t index(const std::string& axis) const;
  std::vector<GridAxis> axes_;
  std::vector<int> coordinates_;
  std::vector<MPI_Comm> groups_;
  MPI_Comm world_;
};

}  // namespace mlps
