#include "src/model/fc_net.h"

#include <algorithm>
#include <optional>

#include "src/model/predicted_classes.h"

namespace mlps {

template <typename T>
FcNet<T>::FcNet(Device& device, const ModelConfig& config, int64_t max_rows,
                ParameterStorage storage)
    : device_(device), config_(config), max_rows_(max_rows), params_(device, storage) {
  const int64_t h = config.hidden;
  embed_ = std::make_unique<LinearLayer<T>>(device, params_, "embed", config.input_features(), h);
  close_unit(0);
  for (int64_t l = 0; l < config.layers; ++l) {
    const size_t first = params_.size();
    blocks_.push_back(std::make_unique<MlpBlock<T>>(
        device, params_, "block" + std::to_string(l), config, max_rows,
        config.checkpoint_activations ? ActivationStorage::external : ActivationStorage::owned));
    close_unit(first);
  }
  const size_t first = params_.size();
  classifier_ = std::make_unique<LinearLayer<T>>(device, params_, "classifier", h, config.classes);
  close_unit(first);
  inputs_ = Buffer<T>(device, max_rows * config.input_features());
  labels_ = Buffer<int32_t>(device, max_rows);
  for (int64_t l = 0; l <= config.layers; ++l) activations_.emplace_back(device, max_rows * h);
  if (config.checkpoint_activations && !blocks_.empty())
    shared_block_activations_ = blocks_.front()->make_activations(max_rows);
  logits_ = Buffer<T>(device, max_rows * config.classes);
  probs_ = Buffer<T>(device, max_rows * config.classes);
  row_loss_ = Buffer<T>(device, max_rows);
  grad_logits_ = Buffer<T>(device, max_rows * config.classes);
  grad_a_ = Buffer<T>(device, max_rows * h);
  grad_b_ = Buffer<T>(device, max_rows * h);
}

template <typename T>
void FcNet<T>::close_unit(size_t first_param) {
  std::vector<Parameter<T>*> unit;
  for (size_t i = first_param; i < params_.size(); ++i) unit.push_back(&params_[i]);
  units_.push_back(std::move(unit));
}

template <typename T>
template <typename Pass>
void FcNet<T>::observed(int unit, bool backward, Pass pass) {
  if (observer_) {
    if (backward) observer_->before_backward(unit, units_[unit]);
    else observer_->before_forward(unit, units_[unit]);
  }
  pass();
  if (observer_) {
    if (backward) observer_->after_backward(unit, units_[unit]);
    else observer_->after_forward(unit, units_[unit]);
  }
}

template <typename T>
void FcNet<T>::forward_block(size_t l, int64_t rows) {
  if (config_.checkpoint_activations)
    blocks_[l]->forward(activations_[l].data(), activations_[l + 1].data(), rows,
                        shared_block_activations_);
  else
    blocks_[l]->forward(activations_[l].data(), activations_[l + 1].data(), rows);
}

template <typename T>
double FcNet<T>::forward(const T* host_inputs, const int32_t* host_labels, int64_t rows) {
  device_.to_device(inputs_.data(), host_inputs,
                    sizeof(T) * static_cast<size_t>(rows * config_.input_features()));
  device_.to_device(labels_.data(), host_labels, sizeof(int32_t) * static_cast<size_t>(rows));
  const int last = unit_count() - 1;
  observed(0, false, [&] { embed_->forward(inputs_.data(), activations_[0].data(), rows); });
  for (size_t l = 0; l < blocks_.size(); ++l)
    observed(static_cast<int>(l) + 1, false, [&] { forward_block(l, rows); });
  observed(last, false,
           [&] { classifier_->forward(activations_.back().data(), logits_.data(), rows); });
  device_.softmax_xent_forward<T>(probs_.data(), row_loss_.data(), logits_.data(), labels_.data(),
                                  rows, config_.classes);
  std::vector<T> losses(static_cast<size_t>(rows));
  device_.to_host(losses.data(), row_loss_.data(), sizeof(T) * losses.size());
  double sum = 0.0;
  for (T v : losses) sum += static_cast<double>(v);
  return sum;
}

template <typename T>
void FcNet<T>::backward(int64_t rows, int64_t global_batch, bool accumulate) {
  device_.softmax_xent_backward<T>(grad_logits_.data(), probs_.data(), labels_.data(), rows,
                                   config_.classes, 1.0 / static_cast<double>(global_batch));
  T* dy = grad_a_.data();
  T* dx = grad_b_.data();
  observed(unit_count() - 1, true, [&] {
    classifier_->backward(activations_.back().data(), grad_logits_.data(), dy, rows, accumulate);
  });
  for (size_t l = blocks_.size(); l-- > 0;) {
    observed(static_cast<int>(l) + 1, true, [&] {
      if (!config_.checkpoint_activations) {
        blocks_[l]->backward(activations_[l].data(), activations_[l + 1].data(), dy, dx, rows,
                             accumulate);
        return;
      }
      {
        // The same kernels on the same input: bit-identical to the forward pass's values.
        std::optional<ScopedPhase> timed;
        if (timer_) timed.emplace(*timer_, Phase::recompute);
        forward_block(l, rows);
      }
      blocks_[l]->backward(activations_[l].data(), activations_[l + 1].data(), dy, dx, rows,
                           accumulate, shared_block_activations_);
    });
    std::swap(dx, dy);
  }
  observed(0, true, [&] { embed_->backward(inputs_.data(), dy, nullptr, rows, accumulate); });
}

template <typename T>
std::vector<int32_t> FcNet<T>::predictions(int64_t rows) const {
  return predicted_classes(device_, probs_.data(), rows, config_.classes);
}

template class FcNet<float>;
template class FcNet<double>;

}  // namespace mlps
