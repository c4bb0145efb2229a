#include "src/schemes/tensor1d/sharded_linear.h"

namespace mlps {

template <typename T>
ShardedLinear<T>::ShardedLinear(const Device& device, const PlannedLinear& layer, int tp_rank,
                                int tp_size)
    : device_(device), split_(layer.split), out_(layer.shape.out), local_in_(layer.shape.in),
      local_out_(out_) {
  if (split_ == LinearSplit::column) {
    local_out_ = out_ / tp_size;
    out_offset_ = tp_rank * local_out_;
  } else if (split_ == LinearSplit::row) {
    local_in_ /= tp_size;
    in_offset_ = tp_rank * local_in_;
  }
}

template <typename T>
void ShardedLinear<T>::multiply(const T* x, int64_t ldx, T* y, int64_t ldy, int64_t rows) const {
  device_.gemm<T>(false, true, rows, local_out_, local_in_, Acc<T>(1), x, ldx, weight_, local_in_,
                  Acc<T>(0), y, ldy);
}

template <typename T>
void ShardedLinear<T>::add_bias(T* y, int64_t rows) const {
  device_.bias_add<T>(y, bias_, rows, bias_size());
}

template <typename T>
void ShardedLinear<T>::weight_grad(const T* x, int64_t ldx, const T* dy, int64_t ldy,
                                   int64_t rows, bool accumulate) {
  device_.gemm_gradient<T>(true, false, local_out_, local_in_, rows, Acc<T>(1), dy, ldy, x, ldx,
                           accumulate ? Acc<T>(1) : Acc<T>(0), weight_grad_, local_in_);
}

template <typename T>
void ShardedLinear<T>::bias_grad(const T* dy, int64_t rows, bool accumulate) {
  device_.bias_grad<T>(bias_grad_, dy, rows, bias_size(), accumulate);
}

template <typename T>
void ShardedLinear<T>::input_grad(const T* dy, int64_t ldy, T* dx, int64_t ldx,
                                  int64_t rows) const {
  device_.gemm<T>(false, false, rows, local_in_, local_out_, Acc<T>(1), dy, ldy, weight_,
                  local_in_, Acc<T>(0), dx, ldx);
}

template class ShardedLinear<float>;
template class ShardedLinear<double>;
template class ShardedLinear<bf16>;
template class ShardedLinear<fp16>;

}  // namespace mlps
