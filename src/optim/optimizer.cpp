#include "src/optim/optimizer.h"

#include <cmath>

namespace mlps {

template <typename T>
void Optimizer<T>::add(T* value, const T* grad, int64_t count) {
  Slot slot{value, grad, count, {}, {}};
  if (config_.kind == OptimizerKind::adam) {
    slot.m = Buffer<T>(device_, count);
    slot.v = Buffer<T>(device_, count);
    slot.m.zero();
    slot.v.zero();
  }
  slots_.push_back(std::move(slot));
}

template <typename T>
void Optimizer<T>::step() {
  ++steps_;
  if (config_.kind == OptimizerKind::sgd) {
    for (auto& s : slots_) device_.sgd_update<T>(s.value, s.grad, s.count, config_.lr);
    return;
  }
  AdamStep adam{config_.lr, config_.beta1, config_.beta2, config_.eps,
                1.0 - std::pow(config_.beta1, static_cast<double>(steps_)),
                1.0 - std::pow(config_.beta2, static_cast<double>(steps_))};
  for (auto& s : slots_) device_.adam_update<T>(s.value, s.grad, s.m.data(), s.v.data(), s.count, adam);
}

template <typename T>
double Optimizer<T>::bytes_per_step() const {
  // Adam reads p, g, m, v and writes p, m, v; SGD reads p, g and writes p.
  const double per_element = config_.kind == OptimizerKind::adam ? 7.0 : 3.0;
  double elements = 0;
  for (const auto& s : slots_) elements += static_cast<double>(s.count);
  return per_element * elements * sizeof(T);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace mlps
