#pragma once
// One rank's shard of a tensor-parallel Linear(in → out) and the GEMMs on it; the layer's
// communication is left to the caller, which knows what overlaps with what. The weight shard
// is [local_out × local_in] row-major (PyTorch's [out × in] layout, cut by rows for a column
// split and by columns for a row split); activations may be strided (leading dimensions), so a
// row-parallel layer reads its input features in place from a full activation.
#include <cstdint>

#include "src/device/device.h"
#include "src/schemes/tensor1d/tensor1d_grid.h"

namespace mlps {

template <typename T>
class ShardedLinear {
 public:
  ShardedLinear(const Device& device, const PlannedLinear& layer, int tp_rank, int tp_size);

  LinearSplit split() const { return split_; }
  int64_t out() const { return out_; }
  int64_t local_in() const { return local_in_; }
  int64_t local_out() const { return local_out_; }
  int64_t in_offset() const { return in_offset_; }    // first input feature held (row split)
  int64_t out_offset() const { return out_offset_; }  // first output feature held (column split)
  int64_t bias_size() const { return local_out_; }    // column: the slice; else the whole bias

  // Points the shard at storage of local_out·local_in (weight) and bias_size() (bias) elements;
  // gradients are fp32 beside typed 16-bit values.
  void bind(T* weight, Acc<T>* weight_grad, T* bias, Acc<T>* bias_grad) {
    weight_ = weight;
    weight_grad_ = weight_grad;
    bias_ = bias;
    bias_grad_ = bias_grad;
  }

  // y[rows × local_out] = x[rows × local_in]·W_shardᵀ (no bias).
  void multiply(const T* x, int64_t ldx, T* y, int64_t ldy, int64_t rows) const;
  // y[rows × bias_size] += bias.
  void add_bias(T* y, int64_t rows) const;
  // dW_shard = dyᵀ·x, overwritten or, when accumulate, added (into the zeros the update left).
  void weight_grad(const T* x, int64_t ldx, const T* dy, int64_t ldy, int64_t rows,
                   bool accumulate);
  // db = Σ_rows dy, dy contiguous [rows × bias_size] (added when accumulate).
  void bias_grad(const T* dy, int64_t rows, bool accumulate);
  // dx[rows × local_in] = dy[rows × local_out]·W_shard.
  void input_grad(const T* dy, int64_t ldy, T* dx, int64_t ldx, int64_t rows) const;

 private:
  const Device& device_;
  LinearSplit split_;
  int64_t out_, local_in_, local_out_, in_offset_ = 0, out_offset_ = 0;
  T* weight_ = nullptr;
  Acc<T>* weight_grad_ = nullptr;
  T* bias_ = nullptr;
  Acc<T>* bias_grad_ = nullptr;
};

}  // namespace mlps
