#include "src/schemes/tensor2d/tensor2d_trainer.h"

#include <algorithm>

#include "src/schemes/tensor2d/balanced_split.h"

namespace mlps {
namespace {

GridShape checked(const ModelConfig& model, int64_t global_batch, const GridShape& shape) {
  check_grid_fits(model, global_batch, shape);
  return shape;
}

// The row group of replica d, grid row i is part d·q + i of the batch's dp·q parts.
int64_t row_groups(const GridShape& shape) { return int64_t{shape.dp} * shape.q; }

}  // namespace

template <typename T>
Tensor2dTrainer<T>::Tensor2dTrainer(const TrainerSetup& s, const GridShape& shape)
    : ForwardBackwardTrainer<T>(s),
      grid_(checked(s.model, s.global_batch, shape), s.backend, this->device_, s.world, this->log_),
      optimizer_config_(s.optimizer),
      net_(this->device_, grid_, s.model, largest_part(s.global_batch, row_groups(shape)), s.seed) {
  this->optimizer_.add(net_.values().data(), net_.grads().data(), net_.layout().total());
}

template <typename T>
BatchSlice Tensor2dTrainer<T>::batch_slice(int64_t global_rows) const {
  const int64_t groups = row_groups({grid_.q(), grid_.dp()});
  const int64_t group = int64_t{grid_.replica()} * grid_.q() + grid_.row();
  return {part_first(global_rows, groups, group), part_size(global_rows, groups, group)};
}

template <typename T>
int64_t Tensor2dTrainer<T>::state_bytes() const {
  const int64_t copies = optimizer_config_.kind == OptimizerKind::adam ? 4 : 2;
  return copies * parameter_bytes();
}

template <typename T>
std::vector<NamedTensor> Tensor2dTrainer<T>::gather_parameters() {
  // Plain MPI (not a Communicator): verification traffic is not part of the measurements.
  const auto values = net_.values().download();
  const std::vector<double> mine(values.begin(), values.end());
  int rank = 0;
  MPI_Comm_rank(grid_.world(), &rank);
  int ranks = 1;
  MPI_Comm_size(grid_.world(), &ranks);
  // Replica 0 (world ranks 0 .. q²−1, grid row r / q, column r % q) holds every shard; shard
  // sizes differ between ranks when q does not divide a dimension.
  const int q = grid_.q();
  std::vector<ShardLayout> layouts;
  if (rank == 0)
    for (int r = 0; r < q * q; ++r) layouts.emplace_back(net_.config(), q, r / q, r % q);
  std::vector<int> counts(static_cast<size_t>(ranks), 0), offsets(counts.size(), 0);
  int gathered = 0;
  for (int r = 0; r < static_cast<int>(layouts.size()); ++r) {
    offsets[r] = gathered;
    counts[r] = static_cast<int>(layouts[r].total());
    gathered += counts[r];
  }
  const int count = grid_.replica() == 0 ? static_cast<int>(mine.size()) : 0;
  std::vector<double> all(static_cast<size_t>(gathered));
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
              MPI_DOUBLE, 0, grid_.world());
  std::vector<NamedTensor> tensors;
  if (rank != 0) return tensors;
  const auto& order = layouts[0].tensors();
  for (size_t t = 0; t < order.size(); ++t) {
    NamedTensor out{order[t].name,
                    std::vector<double>(
                        static_cast<size_t>(order[t].global_rows * order[t].global_cols))};
    for (int r = 0; r < q * q; ++r) {
      const TensorShard& s = layouts[r].tensors()[t];
      if (!s.matrix && r / q != 0) continue;  // vectors: the same on every grid row
      const double* shard = all.data() + offsets[r] + s.offset;
      for (int64_t i = 0; i < s.rows; ++i)
        for (int64_t j = 0; j < s.cols; ++j)
          out.values[(s.row0 + i) * s.global_cols + s.col0 + j] = shard[i * s.cols + j];
    }
    tensors.push_back(std::move(out));
  }
  return tensors;
}

template class Tensor2dTrainer<float>;
template class Tensor2dTrainer<double>;

}  // namespace mlps
