#pragma once
// The optimizer kernels as they were before they used every core and the node's vector width:
// one thread, baseline x86-64 code. Tests check the fast kernels against them bit for bit, and
// bin/bench_kernels rates both side by side, so a regression shows as a ratio.
#include <cstdint>

#include "kernels/kernels.h"

namespace mlps::cpu::reference {

template <typename T>
void adam_update(T* param, const T* grad, T* m, T* v, int64_t n, const AdamStep& step);

template <typename T>
void sgd_update(T* param, const T* grad, int64_t n, double lr);

}  // namespace mlps::cpu::reference
