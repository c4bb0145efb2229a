// Softmax cross-entropy on the GPU: one block per row, row max and normaliser reduced in
// double (numerically stable, as the CPU twin). 16-bit logits give fp32 probabilities and
// losses (Acc<T>) and a 16-bit gradient.
#include <cmath>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/stored_values.h"

namespace mlps::cuda {
namespace {

template <typename T, typename A>
__global__ void softmax_xent_forward_kernel(A* probs, A* row_loss, const T* logits,
                                            const int32_t* labels, int64_t rows,
                                            int64_t classes) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* z = logits + r * classes;
    A* p = probs + r * classes;
    double max_z = -INFINITY;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      max_z = fmax(max_z, static_cast<double>(widen(z[c])));
    max_z = detail::block_reduce(max_z, detail::MaxOp{}, -INFINITY);
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      sum += exp(static_cast<double>(widen(z[c])) - max_z);
    const double log_sum = log(detail::block_sum(sum));
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      p[c] = static_cast<A>(exp(static_cast<double>(widen(z[c])) - max_z - log_sum));
    if (threadIdx.x == 0) {
      // A label outside [0, classes) gives NaN instead of reading out of bounds.
      const int32_t label = labels[r];
      row_loss[r] = static_cast<A>(label >= 0 && label < classes
                                       ? log_sum - (static_cast<double>(widen(z[label])) - max_z)
                                       : NAN);
    }
  }
}

template <typename T, typename A>
__global__ void softmax_xent_backward_kernel(T* dlogits, const A* probs, const int32_t* labels,
                                             int64_t n, int64_t classes, double scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const bool is_label = i % classes == labels[i / classes];
    dlogits[i] = narrow<T>((static_cast<double>(probs[i]) - (is_label ? 1.0 : 0.0)) * scale);
  }
}

}  // namespace

template <typename T>
void softmax_xent_forward(Acc<T>* probs, Acc<T>* row_loss, const T* logits,
                          const int32_t* labels, int64_t rows, int64_t classes) {
  if (rows == 0 || classes == 0) return;
  const int threads = detail::row_block_threads(classes);
  MLPS_LAUNCH(softmax_xent_forward_kernel,
      detail::grid_blocks(rows, 1), threads, 0, detail::stream(),
      probs, row_loss, logits, labels, rows, classes);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
void softmax_xent_backward(T* dlogits, const Acc<T>* probs, const int32_t* labels, int64_t rows,
                           int64_t classes, double scale) {
  const int64_t n = rows * classes;
  if (n == 0) return;
  constexpr int kThreads = 256;
  MLPS_LAUNCH(softmax_xent_backward_kernel,
      detail::grid_blocks(n, kThreads), kThreads, 0, detail::stream(),
      dlogits, probs, labels, n, classes, scale);
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_SOFTMAX_XENT_INSTANCES)
MLPS_INSTANTIATE_16BIT_KERNELS(MLPS_SOFTMAX_XENT_INSTANCES)

}  // namespace mlps::cuda
