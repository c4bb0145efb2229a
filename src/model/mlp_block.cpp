#include "src/model/mlp_block.h"

#include "kernels/half_types.h"

#include <algorithm>

namespace mlps {

template <typename T>
MlpBlock<T>::MlpBlock(Device& device, LayerSet<T>& layers, const std::string& name,
                      const ModelConfig& config)
    : device_(device) {
  const int64_t h = config.hidden;
  if (config.block == BlockKind::plain) {
    fc1_ = layers.linear(name + ".fc", h, h);
    return;
  }
  norm_ = layers.layer_norm(name + ".norm", h);
  fc1_ = layers.linear(name + ".fc1", h, config.ffn_hidden());
  fc2_ = layers.linear(name + ".fc2", config.ffn_hidden(), h);
}

template <typename T>
BlockActivations<T> MlpBlock<T>::make_activations(int64_t rows) const {
  BlockActivations<T> a;
  if (!norm_) return a;  // backward needs only x and y
  a.normed = Buffer<T>(device_, rows * norm_->width());
  a.mean = Buffer<Acc<T>>(device_, rows);
  a.rstd = Buffer<Acc<T>>(device_, rows);
  a.inner = Buffer<T>(device_, rows * fc1_->out_width());
  return a;
}

template <typename T>
BlockScratch<T> make_block_scratch(Device& device, const std::vector<MlpBlock<T>*>& blocks,
                                   int64_t rows) {
  int64_t normed = 0, inner = 0;
  for (const auto& b : blocks) {
    normed = std::max(normed, b->grad_normed_width());
    inner = std::max(inner, b->grad_inner_width());
  }
  BlockScratch<T> s;
  if (normed > 0) s.grad_normed = Buffer<T>(device, rows * normed);
  if (inner > 0) s.grad_inner = Buffer<T>(device, rows * inner);
  return s;
}

template <typename T>
void MlpBlock<T>::forward(const T* x, T* y, int64_t rows, BlockActivations<T>& saved,
                          bool backward_next) {
  if (!norm_) {
    fc1_->forward(x, y, rows, backward_next);
    device_.relu_forward<T>(y, y, rows * fc1_->out_width());
    return;
  }
  norm_->forward(x, saved.normed.data(), saved.mean.data(), saved.rstd.data(), rows);
  fc1_->forward(saved.normed.data(), saved.inner.data(), rows, false);
  device_.relu_forward<T>(saved.inner.data(), saved.inner.data(), rows * fc1_->out_width());
  fc2_->forward(saved.inner.data(), y, rows, backward_next);
  device_.residual_add<T>(y, y, x, rows * fc2_->out_width());
}

template <typename T>
void MlpBlock<T>::backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows,
                           bool accumulate, const BlockActivations<T>& saved,
                           BlockScratch<T>& scratch, DeferredWeightGrads<T>* deferred,
                           bool saved_reused) {
  if (!norm_) {
    T* grad_pre = scratch.grad_normed.data();  // ∂L/∂(fc output), before the ReLU
    device_.relu_backward<T>(grad_pre, dy, y, rows * fc1_->out_width());
    linear_backward(device_, *fc1_, x, grad_pre, dx, rows, accumulate, deferred, false);
    return;
  }
  T* grad_inner = scratch.grad_inner.data();
  linear_backward(device_, *fc2_, saved.inner.data(), dy, grad_inner, rows, accumulate, deferred,
                  saved_reused);
  device_.relu_backward<T>(grad_inner, grad_inner, saved.inner.data(), rows * fc1_->out_width());
  linear_backward(device_, *fc1_, saved.normed.data(), grad_inner, scratch.grad_normed.data(), rows,
                  accumulate, deferred, saved_reused);
  norm_->backward(x, scratch.grad_normed.data(), dx, saved.mean.data(), saved.rstd.data(), rows,
                  accumulate);
  device_.residual_add<T>(dx, dx, dy, rows * fc2_->out_width());  // the skip connection's gradient
}

template class MlpBlock<float>;
template class MlpBlock<double>;
template BlockScratch<float> make_block_scratch(Device&, const std::vector<MlpBlock<float>*>&,
                                                int64_t);
template BlockScratch<double> make_block_scratch(Device&, const std::vector<MlpBlock<double>*>&,
                                                 int64_t);
template class MlpBlock<bf16>;
template class MlpBlock<fp16>;
template BlockScratch<bf16> make_block_scratch(Device&, const std::vector<MlpBlock<bf16>*>&,
                                               int64_t);
template BlockScratch<fp16> make_block_scratch(Device&, const std::vector<MlpBlock<fp16>*>&,
                                               int64_t);

}  // namespace mlps
