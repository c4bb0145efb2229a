#pragma once
// Linear(in → out): y = x·Wᵀ + b with W stored [out × in] as PyTorch stores it.
#include <algorithm>

#include "src/model/fused_weight_update.h"
#include "src/model/layers.h"
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class LinearLayer : public Linear<T> {
 public:
  // fused: the weight update to hand dW to during a backward that does not accumulate (null:
  // dW goes to the gradient for the optimizer's step).
  LinearLayer(Device& device, ParameterList<T>& params, const std::string& name, int64_t in,
              int64_t out, FusedWeightUpdate<T>* fused = nullptr)
      : device_(device), in_(in), out_(out), fused_(fused),
        weight_(params.add(name + ".weight", out, in, InitKind::uniform_fan_in, in)),
        bias_(params.add(name + ".bias", 1, out, InitKind::uniform_fan_in, in)) {}

  int64_t in_width() const override { return in_; }
  int64_t out_width() const override { return out_; }
  // y[rows × out] = x[rows × in]·Wᵀ + b
  void forward(const T* x, T* y, int64_t rows, bool /*backward_next*/ = false) override {
    device_.gemm<T>(false, true, rows, out_, in_, Acc<T>(1), x, in_, weight_.value.data(), in_,
                    Acc<T>(0), y, out_);
    device_.bias_add<T>(y, bias_.value.data(), rows, out_);
  }
  // dW (+)= dyᵀ·x, db (+)= Σ_rows dy, and dx = dy·W unless dx is null (the first layer).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) override {
    if (fused_ && !accumulate) {
      backward_input(dy, dx, rows);  // from W before its update
      return update_weight_in_blocks(x, dy, rows);
    }
    backward_weight(x, dy, rows, accumulate);
    backward_input(dy, dx, rows);
  }
  void backward_input(const T* dy, T* dx, int64_t rows) override {
    if (dx)
      device_.gemm<T>(false, false, rows, in_, out_, Acc<T>(1), dy, out_, weight_.value.data(),
                      in_, Acc<T>(0), dx, in_);
  }
  void backward_weight(const T* x, const T* dy, int64_t rows, bool accumulate) override {
    device_.gemm_gradient<T>(true, false, out_, in_, rows, Acc<T>(1), dy, out_, x, in_,
                             Acc<T>(accumulate ? 1 : 0), weight_.grad.data(), in_);
    device_.bias_grad<T>(bias_.grad.data(), dy, rows, out_, accumulate);
  }

 private:
  // dW a block of rows at a time, each handed to the fused update at once; db to its gradient.
  void update_weight_in_blocks(const T* x, const T* dy, int64_t rows) {
    const int64_t block = fused_->block_rows(in_);
    for (int64_t first = 0; first < out_; first += block) {
      const int64_t n = std::min(block, out_ - first);
      device_.gemm<T>(true, false, n, in_, rows, Acc<T>(1), dy + first, out_, x, in_, Acc<T>(0),
                      fused_->block(), in_);
      fused_->apply_block(weight_.value.data(), first * in_, n * in_);
    }
    device_.bias_grad<T>(bias_.grad.data(), dy, rows, out_, false);
  }

  Device& device_;
  int64_t in_, out_;
  FusedWeightUpdate<T>* fused_;
  Parameter<T>& weight_;
  Parameter<T>& bias_;
};

}  // namespace mlps
