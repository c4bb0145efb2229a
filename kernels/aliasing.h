#pragma once
// Aliasing rules that both backends enforce the same way: a GPU reads its inputs while other
// threads, or a later kernel, write the outputs, so an overlap the CPU loop happens to tolerate
// gives wrong results there. Checking in both twins makes such a call fail on the CPU too.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mlps::detail {

inline bool ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

// Throws std::invalid_argument naming the kernel when output and input overlap.
inline void require_disjoint(const void* output, const void* input, size_t bytes,
                             const char* kernel, const char* what) {
  if (ranges_overlap(output, bytes, input, bytes))
    throw std::invalid_argument(std::string(kernel) + ": " + what + " overlap");
}

// layernorm_backward: its dgamma/dbeta pass reads dy and x after dx is written.
template <typename T>
void require_layernorm_backward_disjoint(const T* dx, const T* dy, const T* x, int64_t rows,
                                         int64_t cols) {
  const size_t bytes = sizeof(T) * static_cast<size_t>(rows * cols);
  require_disjoint(dx, dy, bytes, "layernorm_backward", "dx and dy");
  require_disjoint(dx, x, bytes, "layernorm_backward", "dx and x");
}

}  // namespace mlps::detail
