// Softmax cross-entropy on the CPU, numerically stable (row max subtracted) with the
// normaliser and the loss computed in double; rows split across the rank's threads. 16-bit
// logits give fp32 probabilities and losses (Acc<T>) and a 16-bit gradient.
#include <cmath>
#include <limits>

#include "kernels/cpu/parallel_loops.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/stored_values.h"

namespace mlps::cpu {

template <typename T>
void softmax_xent_forward(Acc<T>* probs, Acc<T>* row_loss, const T* logits,
                          const int32_t* labels, int64_t rows, int64_t classes) {
  using A = Acc<T>;
  detail::parallel_rows(rows, classes, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* z = logits + r * classes;
      A* p = probs + r * classes;
      double max_z = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < classes; ++c) max_z = std::fmax(max_z, static_cast<double>(widen(z[c])));
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(widen(z[c])) - max_z);
      const double log_sum = std::log(sum);
      for (int64_t c = 0; c < classes; ++c)
        p[c] = static_cast<A>(std::exp(static_cast<double>(widen(z[c])) - max_z - log_sum));
      // −log p[label] = log Σ exp(z − max) − (z[label] − max), exact even when p underflows.
      // A label outside [0, classes) gives NaN instead of reading out of bounds.
      const int32_t label = labels[r];
      row_loss[r] = static_cast<A>(label >= 0 && label < classes
                                       ? log_sum - (static_cast<double>(widen(z[label])) - max_z)
                                       : std::numeric_limits<double>::quiet_NaN());
    }
  });
}

template <typename T>
void softmax_xent_backward(T* dlogits, const Acc<T>* probs, const int32_t* labels, int64_t rows,
                           int64_t classes, double scale) {
  detail::parallel_rows(rows, classes, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const Acc<T>* p = probs + r * classes;
      T* d = dlogits + r * classes;
      const int32_t label = labels[r];
      for (int64_t c = 0; c < classes; ++c)
        d[c] = narrow<T>((static_cast<double>(p[c]) - (c == label ? 1.0 : 0.0)) * scale);
    }
  });
}

MLPS_INSTANTIATE_KERNELS(MLPS_SOFTMAX_XENT_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_SOFTMAX_XENT_INSTANCES)

}  // namespace mlps::cpu
