#pragma once
// LayerNorm over whole rows (every feature on this rank): serial training, and tensor1d, whose
// γ and β are replicated over the tensor-parallel ranks.
#include "src/model/layers.h"
#include "src/model/parameter.h"

namespace mlps {

template <typename T>
class ReplicatedLayerNorm : public LayerNorm<T> {
 public:
  ReplicatedLayerNorm(Device& device, Parameter<T>& gamma, Parameter<T>& beta)
      : device_(device), gamma_(gamma), beta_(beta) {}
  int64_t width() const override { return gamma_.cols; }
  void forward(const T* x, T* y, Acc<T>* mean, Acc<T>* rstd, int64_t rows) override {
    device_.layernorm_forward<T>(y, mean, rstd, x, gamma_.value.data(), beta_.value.data(), rows,
                                 width(), 1e-5);
  }
  void backward(const T* x, const T* dy, T* dx, const Acc<T>* mean, const Acc<T>* rstd,
                int64_t rows, bool accumulate) override {
    device_.layernorm_backward<T>(dx, gamma_.grad.data(), beta_.grad.data(), dy, x, mean, rstd,
                                  gamma_.value.data(), rows, width(), accumulate);
  }

 private:
  Device& device_;
  Parameter<T>& gamma_;
  Parameter<T>& beta_;
};

}  // namespace mlps
