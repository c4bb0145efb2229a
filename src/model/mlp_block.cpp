#include "src/model/mlp_block.h"

namespace mlps {

template <typename T>
MlpBlock<T>::MlpBlock(Device& device, ParameterList<T>& params, const std::string& name,
                      const ModelConfig& config, int64_t max_rows, ActivationStorage storage)
    : device_(device), kind_(config.block), hidden_(config.hidden) {
  const int64_t h = config.hidden;
  grad_normed_ = Buffer<T>(device, max_rows * h);
  if (kind_ == BlockKind::plain) {
    fc1_ = std::make_unique<LinearLayer<T>>(device, params, name + ".fc", h, h);
    return;
  }
  const int64_t f = config.ffn_hidden();
  gamma_ = &params.add(name + ".norm.weight", 1, h, InitKind::ones, h);
  beta_ = &params.add(name + ".norm.bias", 1, h, InitKind::zeros, h);
  fc1_ = std::make_unique<LinearLayer<T>>(device, params, name + ".fc1", h, f);
  fc2_ = std::make_unique<LinearLayer<T>>(device, params, name + ".fc2", f, h);
  if (storage == ActivationStorage::owned) own_ = make_activations(max_rows);
  grad_inner_ = Buffer<T>(device, max_rows * f);
}

template <typename T>
BlockActivations<T> MlpBlock<T>::make_activations(int64_t rows) const {
  BlockActivations<T> a;
  if (kind_ == BlockKind::plain) return a;  // backward needs only x and y
  a.normed = Buffer<T>(device_, rows * hidden_);
  a.mean = Buffer<T>(device_, rows);
  a.rstd = Buffer<T>(device_, rows);
  a.inner = Buffer<T>(device_, rows * fc1_->out());
  return a;
}

template <typename T>
void MlpBlock<T>::forward(const T* x, T* y, int64_t rows, BlockActivations<T>& saved) {
  if (kind_ == BlockKind::plain) {
    fc1_->forward(x, y, rows);
    device_.relu_forward<T>(y, y, rows * hidden_);
    return;
  }
  device_.layernorm_forward<T>(saved.normed.data(), saved.mean.data(), saved.rstd.data(), x,
                               gamma_->value.data(), beta_->value.data(), rows, hidden_,
                               norm_eps_);
  fc1_->forward(saved.normed.data(), saved.inner.data(), rows);
  device_.relu_forward<T>(saved.inner.data(), saved.inner.data(), rows * fc1_->out());
  fc2_->forward(saved.inner.data(), y, rows);
  device_.residual_add<T>(y, y, x, rows * hidden_);
}

template <typename T>
void MlpBlock<T>::backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows,
                           bool accumulate, const BlockActivations<T>& saved) {
  if (kind_ == BlockKind::plain) {
    T* grad_pre = grad_normed_.data();  // ∂L/∂(fc output), before the ReLU
    device_.relu_backward<T>(grad_pre, dy, y, rows * hidden_);
    fc1_->backward(x, grad_pre, dx, rows, accumulate);
    return;
  }
  fc2_->backward(saved.inner.data(), dy, grad_inner_.data(), rows, accumulate);
  device_.relu_backward<T>(grad_inner_.data(), grad_inner_.data(), saved.inner.data(),
                           rows * fc1_->out());
  fc1_->backward(saved.normed.data(), grad_inner_.data(), grad_normed_.data(), rows, accumulate);
  device_.layernorm_backward<T>(dx, gamma_->grad.data(), beta_->grad.data(), grad_normed_.data(),
                                x, saved.mean.data(), saved.rstd.data(), gamma_->value.data(),
                                rows, hidden_, accumulate);
  device_.residual_add<T>(dx, dx, dy, rows * hidden_);  // the skip connection's gradient
}

template class MlpBlock<float>;
template class MlpBlock<double>;

}  // namespace mlps
