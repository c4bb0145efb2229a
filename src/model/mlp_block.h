#pragma once
// One block of FC_Net. residual_mlp: y = x + fc2(ReLU(fc1(LayerNorm(x)))); plain: y = ReLU(fc(x)).
// What the backward pass needs from the forward pass (beyond x and y) is a BlockActivations.
// By default the block owns one set, sized for max_rows samples (serial and data-parallel
// training). A pipeline stage keeps one set per micro-batch in flight instead: it builds the
// block with ActivationStorage::external, asks make_activations() for each micro-batch and
// passes that set to forward and backward.
#include <memory>

#include "src/model/linear_layer.h"
#include "src/model_config.h"

namespace mlps {

// The activations one forward pass saves for its backward pass (residual_mlp; empty for plain).
template <typename T>
struct BlockActivations {
  Buffer<T> normed;      // LayerNorm output [rows × H]
  Buffer<T> mean, rstd;  // LayerNorm statistics [rows]
  Buffer<T> inner;       // ReLU output [rows × F]
  size_t bytes() const { return normed.bytes() + mean.bytes() + rstd.bytes() + inner.bytes(); }
};

// owned: the block allocates one BlockActivations of max_rows. external: it allocates none;
// callers pass their own to forward and backward.
enum class ActivationStorage { owned, external };

template <typename T>
class MlpBlock {
 public:
  // max_rows sizes the backward scratch (and the owned activations); 0 allocates nothing.
  MlpBlock(Device& device, ParameterList<T>& params, const std::string& name,
           const ModelConfig& config, int64_t max_rows,
           ActivationStorage storage = ActivationStorage::owned);

  // A set of saved activations for `rows` samples, allocated through the device.
  BlockActivations<T> make_activations(int64_t rows) const;

  // y = block(x); x must stay untouched until backward.
  void forward(const T* x, T* y, int64_t rows) { forward(x, y, rows, own_); }
  void forward(const T* x, T* y, int64_t rows, BlockActivations<T>& saved);
  // dx = ∂L/∂x given dy = ∂L/∂y; parameter gradients (+)= as in LinearLayer. `saved` is what
  // the forward pass of these rows filled.
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows, bool accumulate) {
    backward(x, y, dy, dx, rows, accumulate, own_);
  }
  void backward(const T* x, const T* y, const T* dy, T* dx, int64_t rows, bool accumulate,
                const BlockActivations<T>& saved);

 private:
  Device& device_;
  BlockKind kind_;
  int64_t hidden_;
  double norm_eps_ = 1e-5;
  Parameter<T>* gamma_ = nullptr;  // residual_mlp only
  Parameter<T>* beta_ = nullptr;
  std::unique_ptr<LinearLayer<T>> fc1_;  // plain: the only Linear
  std::unique_ptr<LinearLayer<T>> fc2_;
  BlockActivations<T> own_;           // ActivationStorage::owned only
  Buffer<T> grad_inner_;              // backward scratch: ∂L/∂ReLU output [rows × F]
  Buffer<T> grad_normed_;             // ∂L/∂LayerNorm output (plain: ∂L/∂fc output) [rows × H]
};

}  // namespace mlps
