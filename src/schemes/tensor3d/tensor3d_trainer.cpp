#include "src/schemes/tensor3d/tensor3d_trainer.h"

#include "src/schemes/data_parallel_base.h"

namespace mlps {

template <typename T>
Tensor3dTrainer<T>::Tensor3dTrainer(const TrainerSetup& s, const Shape3d& shape,
                                    const Overlap3d& overlap)
    : ForwardBackwardTrainer<T>(s),
      grid_(check_shape_divides(s.model, s.global_batch, shape), s.backend, this->device_, s.world,
            this->log_),
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
std::vector<NamedTensor> Tensor3dTrainer<T>::gather_parameters() {
  // One host array: the weight shards, then the vector slices.
  const auto weights = net_.weights().download();
  const auto vectors = net_.vectors().download();
  std::vector<double> values(weights.begin(), weights.end());
  values.insert(values.end(), vectors.begin(), vectors.end());
  std::vector<HeldRun> runs;
  for (const LocalTensor& t : net_.tensors()) {
    runs.push_back(t);
    if (!t.weight) runs.back().offset += static_cast<int64_t>(weights.size());
  }
  return gather_held_tensors(runs, values, grid_.world()).tensors;
}

template class Tensor3dTrainer<float>;
template class Tensor3dTrainer<double>;

}  // namespace mlps
