// Adam and SGD updates on the CPU, in the parameter's own precision as PyTorch does: the rank's
// threads each take a contiguous chunk, in code built for the node's widest vectors. Bit for bit
// the reference loops' results (reference_optimizer_cpu.cpp).
#include "kernels/cpu/optimizer_loops.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

namespace {

template <bool kScaled, typename T>
MLPS_VECTOR_CLONES void adam_chunk(T* p, const T* g, T* m, T* v, int64_t n,
                                   const detail::AdamScalars<T>& s) {
  detail::adam_loop<kScaled>(p, g, m, v, n, s);
}

template <typename T>
MLPS_VECTOR_CLONES void sgd_chunk(T* p, const T* g, int64_t n, T rate) {
  detail::sgd_loop(p, g, n, rate);
}

}  // namespace

template <typename T>
void adam_update(T* param, const T* grad, T* m, T* v, int64_t n, const AdamStep& step) {
  const detail::AdamScalars<T> s(step);
  const bool scaled = step.grad_scale != 1.0;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    if (scaled) adam_chunk<true>(param + begin, grad + begin, m + begin, v + begin, end - begin, s);
    else adam_chunk<false>(param + begin, grad + begin, m + begin, v + begin, end - begin, s);
  });
}

template <typename T>
void sgd_update(T* param, const T* grad, int64_t n, double lr) {
  const T rate = static_cast<T>(lr);
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    sgd_chunk(param + begin, grad + begin, end - begin, rate);
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cpu
