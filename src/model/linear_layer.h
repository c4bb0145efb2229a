#pragma once
// Linear(in → out): y = x·Wᵀ + b with W stored [out × in] as PyTorch stores it.
#include "src/model/layers.h"
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class LinearLayer : public Linear<T> {
 public:
  LinearLayer(Device& device, ParameterList<T>& params, const std::string& name, int64_t in,
              int64_t out)
      : device_(device), in_(in), out_(out),
        weight_(params.add(name + ".weight", out, in, InitKind::uniform_fan_in, in)),
        bias_(params.add(name + ".bias", 1, out, InitKind::uniform_fan_in, in)) {}

  int64_t in_width() const override { return in_; }
  int64_t out_width() const override { return out_; }
  // y[rows × out] = x[rows × in]·Wᵀ + b
  void forward(const T* x, T* y, int64_t rows, bool /*backward_next*/ = false) override {
    device_.gemm<T>(false, true, rows, out_, in_, T(1), x, in_, weight_.value.data(), in_, T(0),
                    y, out_);
    device_.bias_add<T>(y, bias_.value.data(), rows, out_);
  }
  // dW (+)= dyᵀ·x, db (+)= Σ_rows dy, and dx = dy·W unless dx is null (the first layer).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) override {
    backward_weight(x, dy, rows, accumulate);
    backward_input(dy, dx, rows);
  }
  void backward_input(const T* dy, T* dx, int64_t rows) override {
    if (dx)
      device_.gemm<T>(false, false, rows, in_, out_, T(1), dy, out_, weight_.value.data(), in_,
                      T(0), dx, in_);
  }
  void backward_weight(const T* x, const T* dy, int64_t rows, bool accumulate) override {
    device_.gemm<T>(true, false, out_, in_, rows, T(1), dy, out_, x, in_,
                    accumulate ? T(1) : T(0), weight_.grad.data(), in_);
    device_.bias_grad<T>(bias_.grad.data(), dy, rows, out_, accumulate);
  }

 private:
  Device& device_;
  int64_t in_, out_;
  Parameter<T>& weight_;
  Parameter<T>& bias_;
};

}  // namespace mlps
