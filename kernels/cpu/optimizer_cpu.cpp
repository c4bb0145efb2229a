// Adam and SGD updates on the CPU, in the parameter's own precision as PyTorch does: the rank's
// threads each take a contiguous chunk, in code built for the node's widest vectors. Bit for bit
// the reference loops' results (reference_optimizer_cpu.cpp).
#include "kernels/cpu/optimizer_loops.h"
#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"

namespace mlps::cpu {

namespace {

template <bool kScaled, bool kZeroGrad, typename T>
MLPS_VECTOR_CLONES void adam_chunk(T* p, T* g, T* m, T* v, int64_t n,
                                   const detail::AdamScalars<T>& s) {
  detail::adam_loop<kScaled, kZeroGrad>(p, g, m, v, n, s);
}

template <bool kZeroGrad, typename T>
MLPS_VECTOR_CLONES void sgd_chunk(T* p, T* g, int64_t n, T rate) {
  detail::sgd_loop<kZeroGrad>(p, g, n, rate);
}

}  // namespace

template <typename T>
void adam_update(T* param, T* grad, T* m, T* v, int64_t n, const AdamStep& step,
                 GradAfterUpdate after) {
  const detail::AdamScalars<T> s(step);
  const bool scaled = step.grad_scale != 1.0;
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    T *p = param + begin, *g = grad + begin, *mm = m + begin, *vv = v + begin;
    const int64_t count = end - begin;
    if (scaled) {
      if (zero) adam_chunk<true, true>(p, g, mm, vv, count, s);
      else adam_chunk<true, false>(p, g, mm, vv, count, s);
    } else {
      if (zero) adam_chunk<false, true>(p, g, mm, vv, count, s);
      else adam_chunk<false, false>(p, g, mm, vv, count, s);
    }
  });
}

template <typename T>
void sgd_update(T* param, T* grad, int64_t n, double lr, GradAfterUpdate after) {
  const T rate = static_cast<T>(lr);
  const bool zero = after == GradAfterUpdate::zeroed;
  detail::parallel_elements(n, [&](int64_t begin, int64_t end) {
    if (zero) sgd_chunk<true>(param + begin, grad + begin, end - begin, rate);
    else sgd_chunk<false>(param + begin, grad + begin, end - begin, rate);
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_OPTIMIZER_INSTANCES)

}  // namespace mlps::cpu
