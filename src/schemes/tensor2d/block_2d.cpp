#include "src/schemes/tensor2d/block_2d.h"

#include "src/schemes/tensor2d/balanced_split.h"

namespace mlps {

template <typename T>
Block2d<T>::Block2d(Device& device, Grid2d& grid, SummaWorkspace<T>& workspace,
                    const ModelConfig& config, int64_t max_rows)
    : device_(device), kind_(config.block),
      local_hidden_(part_size(config.hidden, grid.q(), grid.column())) {
  const int64_t h = config.hidden;
  grad_normed_ = Buffer<T>(device, max_rows * local_hidden_);
  if (kind_ == BlockKind::plain) {
    fc1_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, h, h);
    return;
  }
  norm_ = std::make_unique<SlicedLayerNorm<T>>(device, grid.row_comm(), h, max_rows);
  fc1_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, h, config.ffn_hidden());
  fc2_ = std::make_unique<SummaLinear<T>>(device, grid, workspace, config.ffn_hidden(), h);
  normed_ = Buffer<T>(device, max_rows * local_hidden_);
  inner_ = Buffer<T>(device, max_rows * fc1_->local_out());
  grad_inner_ = Buffer<T>(device, max_rows * fc1_->local_out());
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
void Block2d<T>::forward(const T* x, T* y, int64_t rows) {
  if (kind_ == BlockKind::plain) {
    fc1_->forward(x, y, rows);
    device_.relu_forward<T>(y, y, rows * local_hidden_);
    return;
  }
  norm_->forward(x, normed_.data(), rows);
  fc1_->forward(normed_.data(), inner_.data(), rows);
  device_.relu_forward<T>(inner_.data(), inner_.data(), rows * fc1_->local_out());
  fc2_->forward(inner_.data(), y, rows);
  device_.residual_add<T>(y, y, x, rows * local_hidden_);
}

template <typename T>
void Block2d<T>::backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows) {
  if (kind_ == BlockKind::plain) {
    T* grad_pre = grad_normed_.data();  // ∂L/∂(fc output), before the ReLU
    device_.relu_backward<T>(grad_pre, dy, y, rows * local_hidden_);
    fc1_->backward(x, grad_pre, dx, rows);
    return;
  }
  fc2_->backward(inner_.data(), dy, grad_inner_.data(), rows);
  device_.relu_backward<T>(grad_inner_.data(), grad_inner_.data(), inner_.data(),
                           rows * fc1_->local_out());
  fc1_->backward(normed_.data(), grad_inner_.data(), grad_normed_.data(), rows);
  norm_->backward(x, grad_normed_.data(), dx, rows);
  device_.residual_add<T>(dx, dx, dy, rows * local_hidden_);  // the skip connection's gradient
}

template class Block2d<float>;
template class Block2d<double>;

}  // namespace mlps
