// Mixed-precision storage on the GPU: float values rounded to bf16/fp16 in place or packed into
// 16-bit words with CUDA's own round-to-nearest-even conversions, and a count of non-finite
// values (a grid reduction whose result is copied to the host).
#include <algorithm>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_formats.cuh"
#include "kernels/kernel_instances.h"
#include "kernels/kernels.h"
#include "kernels/storage_checks.h"

namespace mlps::cuda {
namespace {

constexpr int kThreads = 256;
// The count's blocks each add one partial sum atomically: enough blocks to fill the GPU, few
// enough that the atomics cost nothing.
constexpr int64_t kCountBlocks = 1024;

using detail::Bf16;
using detail::Fp16;

// kStrided: rows with gaps between them (the index division is only paid there).
template <typename Format, bool kStrided>
__global__ void round_kernel(float* x, int64_t n, int64_t cols, int64_t ld) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    float* p = kStrided ? x + (i / cols) * ld + i % cols : x + i;
    *p = Format::from_bits(Format::to_bits(*p));
  }
}

template <typename Format>
__global__ void pack_kernel(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = Format::to_bits(src[i]);
}

template <typename Format>
__global__ void unpack_kernel(float* dst, const uint16_t* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = Format::from_bits(src[i]);
}

// Exponent all ones ⇔ inf or NaN, tested on the bits so that fast-math flags cannot drop it.
__device__ inline bool nonfinite(float v) {
  return (__float_as_uint(v) & 0x7f800000u) == 0x7f800000u;
}
__device__ inline bool nonfinite(double v) {
  return (static_cast<unsigned long long>(__double_as_longlong(v)) & 0x7ff0000000000000ull) ==
         0x7ff0000000000000ull;
}

template <typename T>
__global__ void count_nonfinite_kernel(unsigned long long* total, const T* x, int64_t n) {
  unsigned long long mine = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    mine += nonfinite(x[i]) ? 1 : 0;
  // Per-thread counts are at most n / threads, far below 2^53: the double sum is exact.
  const double block_total = detail::block_sum(static_cast<double>(mine));
  if (threadIdx.x == 0 && block_total > 0)
    atomicAdd(total, static_cast<unsigned long long>(block_total));
}

template <typename Format>
void launch_round(float* x, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t n = rows * cols;
  const unsigned int blocks = detail::grid_blocks(n, kThreads);
  const auto kernel =
      ld == cols || rows == 1 ? round_kernel<Format, false> : round_kernel<Format, true>;
  MLPS_LAUNCH(kernel, blocks, kThreads, 0, detail::stream(), x, n, cols, ld);
  MLPS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void round_to_storage(float* x, int64_t rows, int64_t cols, int64_t ld, StorageFormat format) {
  mlps::detail::check_rounding_shape(rows, cols, ld);
  if (format == StorageFormat::full || rows == 0 || cols == 0) return;
  if (format == StorageFormat::bf16) launch_round<Bf16>(x, rows, cols, ld);
  else launch_round<Fp16>(x, rows, cols, ld);
}

template <typename T>
void add_nonfinite_count(uint64_t* total, const T* x, int64_t n) {
  mlps::detail::check_count(n, "add_nonfinite_count");
  if (n == 0) return;
  static_assert(sizeof(uint64_t) == sizeof(unsigned long long));
  const auto blocks =
      static_cast<unsigned int>(std::min<int64_t>(kCountBlocks, (n + kThreads - 1) / kThreads));
  MLPS_LAUNCH(count_nonfinite_kernel<T>, blocks, kThreads, 0, detail::stream(),
      reinterpret_cast<unsigned long long*>(total), x, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
int64_t count_nonfinite(const T* x, int64_t n) {
  mlps::detail::check_count(n, "count_nonfinite");
  if (n == 0) return 0;
  const cudaStream_t stream = detail::stream();
  uint64_t* total = nullptr;
  MLPS_CUDA_CHECK(cudaMallocAsync(&total, sizeof(*total), stream));
  uint64_t host = 0;
  try {
    MLPS_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(*total), stream));
    add_nonfinite_count(total, x, n);
    MLPS_CUDA_CHECK(cudaMemcpyAsync(&host, total, sizeof(host), cudaMemcpyDeviceToHost, stream));
    MLPS_CUDA_CHECK(cudaFreeAsync(total, stream));
    total = nullptr;
    MLPS_CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    if (total && cudaFreeAsync(total, stream) != cudaSuccess) (void)cudaGetLastError();
    throw;
  }
  return static_cast<int64_t>(host);
}

void pack_16bit(uint16_t* dst, const float* src, int64_t n, StorageFormat format) {
  mlps::detail::check_16bit_wire(format, n, "pack_16bit");
  if (n == 0) return;
  const unsigned int blocks = detail::grid_blocks(n, kThreads);
  if (format == StorageFormat::bf16)
    MLPS_LAUNCH(pack_kernel<Bf16>, blocks, kThreads, 0, detail::stream(), dst, src, n);
  else
    MLPS_LAUNCH(pack_kernel<Fp16>, blocks, kThreads, 0, detail::stream(), dst, src, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

void unpack_16bit(float* dst, const uint16_t* src, int64_t n, StorageFormat format) {
  mlps::detail::check_16bit_wire(format, n, "unpack_16bit");
  if (n == 0) return;
  const unsigned int blocks = detail::grid_blocks(n, kThreads);
  if (format == StorageFormat::bf16)
    MLPS_LAUNCH(unpack_kernel<Bf16>, blocks, kThreads, 0, detail::stream(), dst, src, n);
  else
    MLPS_LAUNCH(unpack_kernel<Fp16>, blocks, kThreads, 0, detail::stream(), dst, src, n);
  MLPS_CUDA_CHECK_LAUNCH();
}

MLPS_INSTANTIATE_KERNELS(MLPS_NONFINITE_COUNT_INSTANCES)

}  // namespace mlps::cuda
