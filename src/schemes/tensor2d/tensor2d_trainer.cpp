#include "src/schemes/tensor2d/tensor2d_trainer.h"

#include <algorithm>

#include "src/schemes/named_tensors.h"
#include "src/schemes/tensor2d/balanced_split.h"

namespace mlps {
namespace {

// The row group of replica d, grid row i is part d·q + i of the batch's dp·q parts.
int64_t row_groups(const GridShape& shape) { return int64_t{shape.dp} * shape.q; }

}  // namespace

template <typename T>
Tensor2dTrainer<T>::Tensor2dTrainer(const TrainerSetup& s, const GridShape& shape)
    : ForwardBackwardTrainer<T>(s),
      grid_(check_grid_fits(s.model, s.global_batch, shape), s.backend, this->device_, s.world,
            this->log_),
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
std::vector<NamedTensor> Tensor2dTrainer<T>::gather_parameters() {
  const auto values = net_.values().download();
  std::vector<HeldRun> runs;
  for (const TensorShard& t : net_.layout().tensors()) {
    // Replica 0 owns the parameters; a vector part is the same on every grid row.
    const bool owner = grid_.replica() == 0 && (t.matrix || grid_.row() == 0);
    runs.push_back({t.name, t.global_rows, t.global_cols, t.row0, t.col0,
                    std::max<int64_t>(t.cols, 1), 0, t.offset, t.size(), owner});
  }
  return gather_held_tensors(runs, std::vector<double>(values.begin(), values.end()),
                             grid_.world())
      .tensors;
}

template class Tensor2dTrainer<float>;
template class Tensor2dTrainer<double>;

}  // namespace mlps
