#pragma once
// The memory traffic of each element-wise kernel and optimizer, in elements: every input read
// once and every output written once (the int32 labels of the loss apart, label_bytes). One
// count for the benchmarks' GB/s (bench/support/elementwise_benchmarks.cpp), the step's floor
// (training_step_elementwise_bytes) and the optimizer's bytes per step.
#include <cstdint>

#include "kernels/kernels.h"

namespace mlps::traffic {

inline double d(int64_t n) { return static_cast<double>(n); }

// read y, bias; write y
inline double bias_add(int64_t rows, int64_t cols) { return 2 * d(rows) * d(cols) + d(cols); }
// read dy; write dbias
inline double bias_grad(int64_t rows, int64_t cols) { return d(rows) * d(cols) + d(cols); }
// read x; write y
inline double relu_forward(int64_t n) { return 2 * d(n); }
// read dy, y; write dx
inline double relu_backward(int64_t n) { return 3 * d(n); }
// read a, b; write y
inline double residual_add(int64_t n) { return 3 * d(n); }
// read x, gamma, beta; write y, mean, rstd
inline double layernorm_forward(int64_t rows, int64_t cols) {
  return 2 * d(rows) * d(cols) + 2 * d(cols) + 2 * d(rows);
}
// read dy, x, mean, rstd, gamma; write dx, dgamma, dbeta
inline double layernorm_backward(int64_t rows, int64_t cols) {
  return 3 * d(rows) * d(cols) + 3 * d(cols) + 2 * d(rows);
}
// read logits; write probs, row loss (and read the labels)
inline double softmax_xent_forward(int64_t rows, int64_t classes) {
  return 2 * d(rows) * d(classes) + d(rows);
}
// read probs; write dlogits (and read the labels)
inline double softmax_xent_backward(int64_t rows, int64_t classes) {
  return 2 * d(rows) * d(classes);
}
inline double label_bytes(int64_t rows) { return 4 * d(rows); }
// read p, g, m, v; write p, m, v (and g when it is zeroed)
inline double adam_update(int64_t n, GradAfterUpdate after = GradAfterUpdate::kept) {
  return (after == GradAfterUpdate::zeroed ? 8 : 7) * d(n);
}
// read p, g; write p (and g when it is zeroed)
inline double sgd_update(int64_t n, GradAfterUpdate after = GradAfterUpdate::kept) {
  return (after == GradAfterUpdate::zeroed ? 4 : 3) * d(n);
}

}  // namespace mlps::traffic
