#pragma once
// Linear(in → out): y = x·Wᵀ + b with W stored [out × in] as PyTorch stores it.
#include "src/model/layers.h"
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class LinearLayer : public Linear<T> {
 public:
  LinearLayer(Device& device, ParameterList<T>& params, const std::string& name, int64_t in,
              int64_t out);

  int64_t in_width() const override { return in_; }
  int64_t out_width() const override { return out_; }
  // y[rows × out] = x[rows × in]·Wᵀ + b
  void forward(const T* x, T* y, int64_t rows, bool backward_next = false) override;
  // dW (+)= dyᵀ·x, db (+)= Σ_rows dy, and dx = dy·W unless dx is null (the first layer).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) override;

  Parameter<T>& weight() { return weight_; }
  Parameter<T>& bias() { return bias_; }

 private:
  Device& device_;
  int64_t in_, out_;
  Parameter<T>& weight_;
  Parameter<T>& bias_;
};

}  // namespace mlps
