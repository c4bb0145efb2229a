#include "src/schemes/tensor3d/tensor3d_trainer.h"

#include <algorithm>

#include "src/schemes/data_parallel_base.h"
#include "src/schemes/named_tensors.h"

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
  // One host array: the weight shards, then the vector slices.
  const auto weights = net_.weights().download();
  const auto vectors = net_.vectors().download();
  std::vector<double> values(weights.begin(), weights.end());
  values.insert(values.end(), vectors.begin(), vectors.end());
  std::vector<HeldRun> runs;
  for (const LocalTensor& t : net_.tensors()) {
    HeldRun run{t.name, t.rows, t.cols, t.row0, t.col0, t.block_cols, t.first,
                t.offset, t.count, t.owner};
    if (!t.weight) {  // a vector slice: features col0 .. col0 + count of row 0
      run.row0 = run.first = 0;
      run.block_cols = std::max<int64_t>(t.count, 1);
      run.offset += static_cast<int64_t>(weights.size());
    }
    runs.push_back(run);
  }
  return gather_held_tensors(runs, values, grid_.world()).tensors;
}

template class Tensor3dTrainer<float>;
template class Tensor3dTrainer<double>;

}  // namespace mlps
