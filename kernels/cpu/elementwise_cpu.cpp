// Bias, ReLU and residual kernels on the CPU: plain loops the compiler vectorises.
#include <vector>

#include "kernels/cpu/column_sums.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

template <typename T>
void bias_add(T* y, const T* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

template <typename T>
void bias_grad(T* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate) {
  // Row by row into a double accumulator: contiguous reads, and fp32 sums stay accurate.
  std::vector<double> sum(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = dy + r * cols;
    for (int64_t c = 0; c < cols; ++c) sum[c] += static_cast<double>(row[c]);
  }
  detail::store_column_sums(dbias, sum, accumulate);
}

template <typename T>
void relu_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <typename T>
void relu_backward(T* dx, const T* dy, const T* y, int64_t n) {
  // Read dy unconditionally so the select vectorises (dx may alias dy, so no __restrict).
  for (int64_t i = 0; i < n; ++i) {
    const T d = dy[i];
    dx[i] = y[i] > T(0) ? d : T(0);
  }
}

template <typename T>
void residual_add(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

MLPS_INSTANTIATE_KERNELS(MLPS_ELEMENTWISE_INSTANCES)

}  // namespace mlps::cpu
