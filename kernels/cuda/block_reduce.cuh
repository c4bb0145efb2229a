#pragma once
// Reductions inside one thread block, in double whatever the storage type, so the CUDA kernels
// accumulate like their CPU twins. Every thread of the block must call them (they synchronise);
// blockDim.x must be a multiple of 32 and at most 1024.
#include <cuda_runtime.h>

#include <cstdint>

namespace mlps::cuda::detail {

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Returns the block-wide reduction to every thread.
template <typename Op>
__device__ double block_reduce(double value, Op op, double identity) {
  __shared__ double warp_values[32];
  const unsigned int lane = threadIdx.x % 32;
  const unsigned int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2)
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0) warp_values[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < blockDim.x / 32 ? warp_values[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
    if (lane == 0) warp_values[0] = value;
  }
  __syncthreads();
  const double result = warp_values[0];
  __syncthreads();  // the next call reuses warp_values
  return result;
}

__device__ inline double block_sum(double value) { return block_reduce(value, SumOp{}, 0.0); }

// Threads per block for kernels that give one block to each row: about eight elements per
// thread, from one warp up to 1024 threads.
inline int row_block_threads(int64_t cols) {
  int threads = 32;
  while (threads < 1024 && threads * int64_t{8} < cols) threads *= 2;
  return threads;
}

// Column reductions use 32 columns × 8 row lanes per block: each warp reads 32 consecutive
// elements of one row (coalesced), then the 8 partial sums of a column are added in order.
constexpr int kColumnTile = 32;
constexpr int kRowLanes = 8;

}  // namespace mlps::cuda::detail
