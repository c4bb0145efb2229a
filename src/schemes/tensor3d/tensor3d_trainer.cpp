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
Tensor3dTrainer<T>::Tensor3dTrainer(DeviceKind device, const ModelConfig& model,
                                    const OptimizerConfig& optimizer, uint64_t seed,
                                    int64_t global_batch, const Shape3d& shape,
                                    const Overlap3d& overlap, CommBackend backend,
                                    MPI_Comm world)
    : device_(device), grid_(checked(model, global_batch, shape), backend, device_, world),
      net_(device_, grid_, model, global_batch / (int64_t{shape.dp} * shape.depth), seed,
           overlap),
      optimizer_(device_, optimizer), parameter_count_(mlps::parameter_count(model)) {
  optimizer_.add(net_.weights().data(), net_.weight_grads().data(), net_.weights().size());
  optimizer_.add(net_.vectors().data(), net_.vector_grads().data(), net_.vectors().size());
}

template <typename T>
BatchSlice Tensor3dTrainer<T>::batch_slice(int64_t global_rows) const {
  const Shape3d& s = grid_.shape();
  return even_batch_slice(global_rows, grid_.replica() * s.depth + grid_.d(), s.dp * s.depth);
}

template <typename T>
double Tensor3dTrainer<T>::sum_over_world(double local) const {
  double total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, grid_.world());
  return total;
}

template <typename T>
double Tensor3dTrainer<T>::train_step(const HostBatch& rows, int64_t global_batch,
                                      PhaseTimer& timer) {
  discard_untaken_comm();
  double loss_sum = 0;
  {
    ScopedPhase phase(timer, Phase::forward);
    loss_sum = net_.forward(rows);
  }
  {
    ScopedPhase phase(timer, Phase::backward);
    net_.backward(rows.rows, global_batch, &timer);
  }
  {
    ScopedPhase phase(timer, Phase::optimizer);
    optimizer_.step();
  }
  // Every rank of a plane holds the same samples' losses: (r, c) = (0, 0) speaks for them.
  const bool speaker = grid_.r() == 0 && grid_.c() == 0;
  return sum_over_world(speaker ? loss_sum : 0.0) / static_cast<double>(global_batch);
}

template <typename T>
Evaluation Tensor3dTrainer<T>::evaluate(const HostBatch& rows, int64_t /*global_rows*/) {
  discard_untaken_comm();  // this pass's traffic is --inference's iteration
  // Every rank runs the forward pass, rows or none: the depth all-gathers span the planes.
  const double loss_sum = net_.forward(rows);
  // Every rank of a plane holds the same samples: (r, c) = (0, 0) speaks for them.
  double totals[2] = {0, 0};  // Σ loss, correct predictions
  if (grid_.r() == 0 && grid_.c() == 0) {
    totals[0] = loss_sum;
    const auto predicted = net_.predictions(rows.rows);
    for (int64_t r = 0; r < rows.rows; ++r) totals[1] += predicted[r] == rows.labels[r];
  }
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, grid_.world());
  return {static_cast<int64_t>(totals[1]), totals[0]};
}

template <typename T>
void Tensor3dTrainer<T>::discard_untaken_comm() {
  grid_.log().take_totals();
  grid_.log().take_blocked_seconds();
}

template <typename T>
std::map<std::string, CommTotals> Tensor3dTrainer<T>::take_comm_totals() {
  auto totals = grid_.log().take_totals();
  for (const auto& [kind, t] : totals) {
    const auto [it, first] = measured_.try_emplace(kind, ByteRange{t.bytes, t.bytes});
    if (!first) it->second = {std::min(it->second.min, t.bytes), std::max(it->second.max, t.bytes)};
  }
  return totals;
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
