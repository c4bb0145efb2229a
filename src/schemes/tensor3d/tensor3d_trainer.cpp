#include "src/schemes/tensor3d/tensor3d_trainer.h"

#include <algorithm>

#include "src/schemes/data_parallel_base.h"

namespace mlps {
namespace {

Shape3d checked(const ModelConfig& model, int64_t global_batch, const Shape3d& shape) {
  check_shape_divides(model, global_batch, shape);
  return shape;
}

}  // namespace

template <typename T>
Tensor3dTrainer<T>::Tensor3dTrainer(const TrainerSetup& s, const Shape3d& shape,
                                    const Overlap3d& overlap)
    : ForwardBackwardTrainer<T>(s),
      grid_(checked(s.model, s.global_batch, shape), s.backend, this->device_, s.world, this->log_),
      net_(this->device_, grid_, s.model, s.global_batch / (int64_t{shape.dp} * shape.depth),
           s.seed, overlap) {
  this->optimizer_.add(net_.weights().data(), net_.weight_grads().data(), net_.weights().size());
  this->optimizer_.add(net_.vectors().data(), net_.vector_grads().data(), net_.vectors().size());
}

template <typename T>
BatchSlice Tensor3dTrainer<T>::batch_slice(int64_t global_rows) const {
  const Shape3d& s = grid_.shape();
  return even_batch_slice(global_rows, grid_.replica() * s.depth + grid_.d(), s.dp * s.depth);
}

template <typename T>
int64_t Tensor3dTrainer<T>::weight_bytes() const {
  return net_.weights_size() * int64_t{sizeof(T)};
}

template <typename T>
int64_t Tensor3dTrainer<T>::vector_bytes() const {
  return net_.vectors_size() * int64_t{sizeof(T)};
}

template <typename T>
std::vector<NamedTensor> Tensor3dTrainer<T>::gather_parameters() {
  // Plain MPI (not a Communicator): verification traffic is not part of the measurements.
  // Each tensor's owners write their elements into a zeroed full tensor; the sum lands on 0.
  const auto weights = net_.weights().download();
  const auto vectors = net_.vectors().download();
  int rank = 0;
  MPI_Comm_rank(grid_.world(), &rank);
  std::vector<NamedTensor> tensors;
  for (const LocalTensor& s : net_.tensors()) {
    std::vector<double> full(static_cast<size_t>(s.rows * s.cols), 0.0);
    if (s.owner) {
      for (int64_t k = 0; k < s.count; ++k) {
        if (s.weight) {
          const int64_t e = s.first + k, row = s.row0 + e / s.block_cols;
          if (row < s.rows)
            full[row * s.cols + s.col0 + e % s.block_cols] =
                static_cast<double>(weights[s.offset + k]);
        } else if (s.col0 + k < s.cols) {
          full[s.col0 + k] = static_cast<double>(vectors[s.offset + k]);
        }
      }
    }
    std::vector<double> sum(rank == 0 ? full.size() : 0);
    MPI_Reduce(full.data(), sum.data(), static_cast<int>(full.size()), MPI_DOUBLE, MPI_SUM, 0,
               grid_.world());
    if (rank == 0) tensors.push_back({s.name, std::move(sum)});
  }
  return tensors;
}

template class Tensor3dTrainer<float>;
template class Tensor3dTrainer<double>;

}  // namespace mlps
