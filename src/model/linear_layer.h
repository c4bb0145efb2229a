#pragma once
// Linear(in → out): y = x·Wᵀ + b with W stored [out × in] as PyTorch stores it.
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class LinearLayer {
 public:
  LinearLayer(Device& device, ParameterList<T>& params, const std::string& name, int64_t in,
              int64_t out);

  // y[rows × out] = x[rows × in]·Wᵀ + b
  void forward(const T* x, T* y, int64_t rows) const;
  // dW (+)= dyᵀ·x, db (+)= Σ_rows dy, and dx = dy·W unless dx is null (the first layer).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate);

  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  Parameter<T>& weight() { return weight_; }
  Parameter<T>& bias() { return bias_; }

 private:
  Device& device_;
  int64_t in_, out_;
  Parameter<T>& weight_;
  Parameter<T>& bias_;
};

}  // namespace mlps
