#pragma once
// One block of FC_Net. residual_mlp: y = x + fc2(ReLU(fc1(LayerNorm(x)))); plain: y = ReLU(fc(x)).
// The block keeps the activations its backward pass needs, sized for max_rows samples.
#include <memory>

#include "src/model/linear_layer.h"
#include "src/model_config.h"

namespace mlps {

template <typename T>
class MlpBlock {
 public:
  MlpBlock(Device& device, ParameterList<T>& params, const std::string& name,
           const ModelConfig& config, int64_t max_rows);

  // y = block(x); x must stay untouched until backward.
  void forward(const T* x, T* y, int64_t rows);
  // dx = ∂L/∂x given dy = ∂L/∂y; parameter gradients (+)= as in LinearLayer.
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows, bool accumulate);

 private:
  Device& device_;
  BlockKind kind_;
  int64_t hidden_;
  double norm_eps_ = 1e-5;
  Parameter<T>* gamma_ = nullptr;  // residual_mlp only
  Parameter<T>* beta_ = nullptr;
  std::unique_ptr<LinearLayer<T>> fc1_;  // plain: the only Linear
  std::unique_ptr<LinearLayer<T>> fc2_;
  Buffer<T> normed_, mean_, rstd_;    // LayerNorm output and statistics [rows × H], [rows]
  Buffer<T> inner_, grad_inner_;      // ReLU output and its gradient [rows × F]
  Buffer<T> grad_normed_;             // ∂L/∂LayerNorm output (plain: ∂L/∂fc output) [rows × H]
};

}  // namespace mlps
