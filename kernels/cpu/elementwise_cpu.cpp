// Bias, ReLU and residual kernels on the CPU: loops split across the rank's threads
// (parallel_loops.h), each chunk compiled for the node's widest vectors. 16-bit tensors are
// read and written through widen/narrow (kernels/stored_values.h), with fp32 arithmetic.
#include "kernels/cpu/column_sums.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/stored_values.h"

namespace mlps::cpu {
namespace {

template <typename T>
MLPS_VECTOR_CLONES void bias_add_rows(T* y, const T* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] = narrow<T>(widen(row[c]) + widen(bias[c]));
  }
}

template <typename T>
MLPS_VECTOR_CLONES void relu_forward_chunk(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = widen(x[i]) > 0 ? x[i] : T{};
}

template <typename T>
MLPS_VECTOR_CLONES void relu_backward_chunk(T* dx, const T* dy, const T* y, int64_t n) {
  // Read dy unconditionally so the select vectorises (dx may alias dy, so no __restrict).
  for (int64_t i = 0; i < n; ++i) {
    const T d = dy[i];
    dx[i] = widen(y[i]) > 0 ? d : T{};
  }
}

template <typename T>
MLPS_VECTOR_CLONES void residual_add_chunk(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = narrow<T>(widen(a[i]) + widen(b[i]));
}

}  // namespace

template <typename T>
void bias_add(T* y, const T* bias, int64_t rows, int64_t cols) {
  detail::parallel_rows(rows, cols, [&](int64_t r0, int64_t r1) {
    bias_add_rows(y + r0 * cols, bias, r1 - r0, cols);
  });
}

template <typename T>
void bias_grad(Acc<T>* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate) {
  // Column sums in double: fp32 sums stay accurate.
  detail::column_sums(dbias, rows, cols, accumulate, [&](int64_t r, int64_t c) {
    return static_cast<double>(widen(dy[r * cols + c]));
  });
}

template <typename T>
void relu_forward(T* y, const T* x, int64_t n) {
  detail::parallel_elements(
      n, [&](int64_t i0, int64_t i1) { relu_forward_chunk(y + i0, x + i0, i1 - i0); });
}

template <typename T>
void relu_backward(T* dx, const T* dy, const T* y, int64_t n) {
  detail::parallel_elements(n, [&](int64_t i0, int64_t i1) {
    relu_backward_chunk(dx + i0, dy + i0, y + i0, i1 - i0);
  });
}

template <typename T>
void residual_add(T* y, const T* a, const T* b, int64_t n) {
  detail::parallel_elements(n, [&](int64_t i0, int64_t i1) {
    residual_add_chunk(y + i0, a + i0, b + i0, i1 - i0);
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_ELEMENTWISE_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_ELEMENTWISE_INSTANCES)

}  // namespace mlps::cpu
