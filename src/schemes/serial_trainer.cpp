#include "src/schemes/serial_trainer.h"

#include <algorithm>
#include <stdexcept>

#include "src/schemes/named_tensors.h"

namespace mlps {

template <typename T>
SerialTrainer<T>::SerialTrainer(const DeviceConfig& device, const ModelConfig& model,
                                const OptimizerConfig& optimizer, uint64_t seed, int64_t max_rows)
    : SchemeTrainer<T>(device, model, optimizer, MPI_COMM_SELF),
      model_(device_, model, max_rows) {
  model_.parameters().initialise(seed);
  for (auto& p : model_.parameters()) optimizer_.add(p->value.data(), p->grad.data(), p->size());
}

template <typename T>
double SerialTrainer<T>::forward(const HostBatch& rows) {
  if (rows.rows > model_.max_rows())
    throw std::logic_error("batch of " + std::to_string(rows.rows) + " rows exceeds the model's " +
                           std::to_string(model_.max_rows()));
  return model_.forward(rows);
}

template <typename T>
double SerialTrainer<T>::train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) {
  double loss_sum = 0;
  {
    ScopedPhase phase(timer, Phase::forward);
    loss_sum = forward(rows);
  }
  {
    ScopedPhase phase(timer, Phase::backward);
    model_.set_timer(&timer);
    model_.backward(rows.rows, global_batch, false);
  }
  {
    ScopedPhase phase(timer, Phase::optimizer);
    optimizer_.step();
  }
  return loss_sum / static_cast<double>(global_batch);
}

template <typename T>
Evaluation SerialTrainer<T>::evaluate(const HostBatch& rows, int64_t /*global_rows*/) {
  Evaluation e;
  e.loss_sum = forward(rows);
  const auto predicted = model_.predictions(rows.rows);
  for (int64_t r = 0; r < rows.rows; ++r) e.correct += predicted[r] == rows.labels[r];
  return e;
}

template <typename T>
std::vector<NamedTensor> SerialTrainer<T>::gather_parameters() {
  std::vector<NamedTensor> tensors;
  append_named_tensors<T>(model_.parameters(), tensors);
  return tensors;
}

template class SerialTrainer<float>;
template class SerialTrainer<double>;

}  // namespace mlps
