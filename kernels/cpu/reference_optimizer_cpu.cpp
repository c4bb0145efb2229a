// The single-thread reference optimizer (reference_optimizer.h). No MLPS_VECTOR_CLONES here:
// the loops compile for the baseline instruction set, as the kernels did before.
#include "kernels/cpu/reference_optimizer.h"

#include "kernels/cpu/optimizer_loops.h"
#include "kernels/kernel_instances.h"

namespace mlps::cpu::reference {

template <typename T>
void adam_update(T* param, const T* grad, T* m, T* v, int64_t n, const AdamStep& step) {
  const detail::AdamScalars<T> s(step);
  if (step.grad_scale == 1.0) detail::adam_loop<false, false>(param, grad, m, v, n, s);
  else detail::adam_loop<true, false>(param, grad, m, v, n, s);
}

template <typename T>
void sgd_update(T* param, const T* grad, int64_t n, double lr) {
  detail::sgd_loop<false>(param, grad, n, static_cast<T>(lr));
}

// Their own instances: the reference keeps the gradient (the fast kernels may zero it).
template void adam_update<float>(float*, const float*, float*, float*, int64_t, const AdamStep&);
template void adam_update<double>(double*, const double*, double*, double*, int64_t,
                                  const AdamStep&);
template void sgd_update<float>(float*, const float*, int64_t, double);
template void sgd_update<double>(double*, const double*, int64_t, double);

}  // namespace mlps::cpu::reference
