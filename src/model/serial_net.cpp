#include "src/model/serial_net.h"

#include "kernels/half_types.h"

#include "src/model/linear_layer.h"
#include "src/model/replicated_layernorm.h"

namespace mlps {

template <typename T>
std::unique_ptr<Linear<T>> SerialLayers<T>::linear(const std::string& name, int64_t in,
                                                   int64_t out) {
  return std::make_unique<LinearLayer<T>>(device_, params_, name, in, out, fused_);
}

template <typename T>
std::unique_ptr<LayerNorm<T>> SerialLayers<T>::layer_norm(const std::string& name,
                                                          int64_t features) {
  Parameter<T>& gamma = params_.add(name + ".weight", 1, features, InitKind::ones, features);
  Parameter<T>& beta = params_.add(name + ".bias", 1, features, InitKind::zeros, features);
  return std::make_unique<ReplicatedLayerNorm<T>>(device_, gamma, beta);
}

template <typename T>
void SerialLayers<T>::unit_made(int /*unit*/) {
  std::vector<Parameter<T>*> unit;
  for (size_t i = unit_first_; i < params_.size(); ++i) unit.push_back(&params_[i]);
  units_.push_back(std::move(unit));
  unit_first_ = params_.size();
}

template class SerialLayers<float>;
template class SerialLayers<double>;
template class SerialLayers<bf16>;
template class SerialLayers<fp16>;

}  // namespace mlps
