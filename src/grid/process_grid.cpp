#include "src/grid/process_grid.h"

#include <stdexcept>

namespace mlps {

std::vector<int> grid_coordinates(const std::vector<GridAxis>& axes, int rank) {
  std::vector<int> coordinates(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {  // the last axis is the fastest
    coordinates[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  return coordinates;
}

int grid_rank(const std::vector<GridAxis>& axes, const std::vector<int>& coordinates) {
  int rank = 0;
  for (size_t i = 0; i < axes.size(); ++i) rank = rank * axes[i].size + coordinates[i];
  return rank;
}

std::string dims_text(const std::vector<int>& dims) {
  std::string text;
  for (int d : dims) {
    if (!text.empty()) text += ',';
    text += std::to_string(d);
  }
  return text;
}

ProcessGrid::ProcessGrid(std::vector<GridAxis> axes, MPI_Comm world)
    : axes_(std::move(axes)), world_(world) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &ranks);
  int64_t product = 1;
  for (const GridAxis& a : axes_) product *= a.size;
  if (product != ranks)
    throw std::logic_error("ProcessGrid: axes give " + std::to_string(product) + " ranks, not " +
                           std::to_string(ranks));
  coordinates_ = grid_coordinates(axes_, rank);
  for (size_t i = 0; i < axes_.size(); ++i) {
    // The group's color: this rank with its coordinate on axis i taken out.
    int color = 0;
    for (size_t j = 0; j < axes_.size(); ++j)
      if (j != i) color = color * axes_[j].size + coordinates_[j];
    MPI_Comm group = MPI_COMM_NULL;
    MPI_Comm_split(world, color, coordinates_[i], &group);
    groups_.push_back(group);
  }
}

ProcessGrid::~ProcessGrid() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // a grid outliving MPI (a static, an exit path): nothing to free
  for (MPI_Comm& group : groups_) MPI_Comm_free(&group);
}

size_t ProcessGrid::index(const std::string& axis) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == axis) return i;
  throw std::logic_error("ProcessGrid: no axis '" + axis + "'");
}

std::unique_ptr<Communicator> ProcessGrid::communicator(const std::string& axis,
                                                        CommBackend backend, const Device& device,
                                                        const std::string& name,
                                                        std::shared_ptr<CommLog> log,
                                                        CommRole role) const {
  return make_communicator(backend, device, group(axis), name, std::move(log), role);
}

}  // namespace mlps
