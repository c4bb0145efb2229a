#include "src/schemes/tensor2d/block_2d.h"

#include "src/schemes/tensor2d/balanced_split.h"

namespace mlps {

template <typename T>
Block2dActivations<T>::Block2dActivations(Device& device, const ModelConfig& config, int q,
                                          int column, int64_t max_rows) {
  if (config.block == BlockKind::plain) return;
  normed = Buffer<T>(device, max_rows * part_size(config.hidden, q, column));
  inner = Buffer<T>(device, max_rows * part_size(config.ffn_hidden(), q, column));
}

template <typename T>
Block2dScratch<T>::Block2dScratch(Device& device, const ModelConfig& config, int q, int column,
                                  int64_t max_rows)
    : grad_normed(device, max_rows * part_size(config.hidden, q, column)) {
  if (config.block == BlockKind::residual_mlp)
    grad_inner = Buffer<T>(device, max_rows * part_size(config.ffn_hidden(), q, column));
}

template <typename T>
Block2d<T>::Block2d(Device& device, Grid2d& grid, SummaWorkspace<T>& workspace,
                    Block2dScratch<T>& scratch, const ModelConfig& config, int64_t max_rows)
    : device_(device), scratch_(scratch), kind_(config.block),
      local_hidden_(part_size(config.hidden, grid.q(), grid.column())) {
  const int64_t h = config.hidden;
  if (kind_ == BlockKind::plain) {
    fc1_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, h, h);
    return;
  }
  norm_ = std::make_unique<SlicedLayerNorm<T>>(device, grid.row_comm(), h, max_rows);
  fc1_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, h, config.ffn_hidden());
  fc2_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, config.ffn_hidden(), h);
}

template <typename T>
void Block2d<T>::bind(const ShardLayout& layout, const std::string& prefix, T* values,
                      T* grads) {
  if (kind_ == BlockKind::plain) {
    fc1_->bind(layout, prefix + ".fc", values, grads);
    return;
  }
  const int64_t g = layout.find(prefix + ".norm.weight").offset;
  const int64_t b = layout.find(prefix + ".norm.bias").offset;
  norm_->bind(values + g, values + b, grads + g, grads + b);
  fc1_->bind(layout, prefix + ".fc1", values, grads);
  fc2_->bind(layout, prefix + ".fc2", values, grads);
}

template <typename T>
void Block2d<T>::forward(const T* x, T* y, int64_t rows, Block2dActivations<T>& saved) {
  if (kind_ == BlockKind::plain) {
    fc1_->forward(x, y, rows);
    device_.relu_forward<T>(y, y, rows * local_hidden_);
    return;
  }
  norm_->forward(x, saved.normed.data(), rows);
  fc1_->forward(saved.normed.data(), saved.inner.data(), rows);
  device_.relu_forward<T>(saved.inner.data(), saved.inner.data(), rows * fc1_->local_out());
  fc2_->forward(saved.inner.data(), y, rows);
  device_.residual_add<T>(y, y, x, rows * local_hidden_);
}

template <typename T>
void Block2d<T>::backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows,
                          const Block2dActivations<T>& saved) {
  T* grad_normed = scratch_.grad_normed.data();
  if (kind_ == BlockKind::plain) {
    T* grad_pre = grad_normed;  // ∂L/∂(fc output), before the ReLU
    device_.relu_backward<T>(grad_pre, dy, y, rows * local_hidden_);
    fc1_->backward(x, grad_pre, dx, rows);
    return;
  }
  T* grad_inner = scratch_.grad_inner.data();
  fc2_->backward(saved.inner.data(), dy, grad_inner, rows);
  device_.relu_backward<T>(grad_inner, grad_inner, saved.inner.data(), rows * fc1_->local_out());
  fc1_->backward(saved.normed.data(), grad_inner, grad_normed, rows);
  norm_->backward(x, grad_normed, dx, rows);
  device_.residual_add<T>(dx, dx, dy, rows * local_hidden_);  // the skip connection's gradient
}

template struct Block2dActivations<float>;
template struct Block2dActivations<double>;
template struct Block2dScratch<float>;
template struct Block2dScratch<double>;
template class Block2d<float>;
template class Block2d<double>;

}  // namespace mlps
