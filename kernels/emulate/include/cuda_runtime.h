#pragma once
// The emulated-GPU build (make CUDA=emulate): the CUDA runtime names this project uses, mapped
// onto HIP-CPU, a header-only HIP runtime that runs kernels on the CPU (blocks over TBB, the
// threads of a block as fibers). This directory is on the include path only in that build, so
// the sources keep including <cuda_runtime.h> and stay CUDA. Where HIP-CPU differs from CUDA
// the bridge is here, small and commented; everything else is a one-line rename.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace mlps::emulate {

// What the emulated runtime counts of the project's calls (mlps::cuda::runtime_counts): the
// calls a GPU step must not make inside it (allocations, frees, host synchronisations) and the
// kernels it launches. The stand-ins of cuBLAS and NCCL count one launch per call and wait for
// their inputs through HIP directly: on a GPU those waits do not happen.
struct RuntimeTally {
  std::atomic<int64_t> launches{0};
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> frees{0};
  std::atomic<int64_t> host_syncs{0};
};
inline RuntimeTally& tally() {
  static RuntimeTally counts;
  return counts;
}
// Counts `status`'s call when it succeeded.
inline hipError_t counted(hipError_t status, std::atomic<int64_t>& counter) {
  if (status == hipSuccess) counter.fetch_add(1, std::memory_order_relaxed);
  return status;
}

}  // namespace mlps::emulate

using cudaError_t = hipError_t;
inline constexpr cudaError_t cudaSuccess = hipSuccess;
using cudaStream_t = hipStream_t;
using cudaEvent_t = hipEvent_t;
using cudaMemcpyKind = hipMemcpyKind;
inline constexpr cudaMemcpyKind cudaMemcpyHostToDevice = hipMemcpyHostToDevice;
inline constexpr cudaMemcpyKind cudaMemcpyDeviceToHost = hipMemcpyDeviceToHost;
inline constexpr cudaMemcpyKind cudaMemcpyDeviceToDevice = hipMemcpyDeviceToDevice;
inline constexpr hipStreamFlags cudaStreamNonBlocking = hipStreamNonBlocking;

inline const char* cudaGetErrorName(cudaError_t e) { return hipGetErrorName(e); }
inline const char* cudaGetErrorString(cudaError_t e) { return hipGetErrorString(e); }
inline cudaError_t cudaGetLastError() { return hipGetLastError(); }
inline cudaError_t cudaGetDeviceCount(int* count) { return hipGetDeviceCount(count); }
inline cudaError_t cudaSetDevice(int device) { return hipSetDevice(device); }
inline cudaError_t cudaGetDevice(int* device) { return hipGetDevice(device); }
// There is no CUDA runtime or driver: results say "unknown" and "none" rather than HIP-CPU's
// numbers; the device name says the GPU is emulated.
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 0;
  return hipSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int*) { return hipErrorNotSupported; }

// The device properties the project reads, from HIP-CPU's, which have no UUID. The emulated GPU
// is this process's own memory, so its identity is the process: host name and pid, which differ
// between ranks as the UUIDs of one GPU per rank do.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
  struct {
    char bytes[16];
  } uuid;
};
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);

// Memory: the emulated GPU's memory is host memory.
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  return mlps::emulate::counted(hipMalloc(p, bytes), mlps::emulate::tally().allocations);
}
// cudaFree waits for the whole device before it frees: a host synchronisation too.
inline cudaError_t cudaFree(void* p) {
  if (!p) return hipSuccess;
  mlps::emulate::tally().host_syncs.fetch_add(1, std::memory_order_relaxed);
  return mlps::emulate::counted(hipFree(p), mlps::emulate::tally().frees);
}
inline cudaError_t cudaMemGetInfo(size_t* free, size_t* total) { return hipMemGetInfo(free, total); }
// Pinned host memory: the emulated GPU's memory is host memory already. A runtime allocation
// and free as any other (a step must make neither).
inline cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return mlps::emulate::counted(hipHostMalloc(p, bytes), mlps::emulate::tally().allocations);
}
inline cudaError_t cudaFreeHost(void* p) {
  return mlps::emulate::counted(hipHostFree(p), mlps::emulate::tally().frees);
}
// Stream-ordered allocation pools: the emulated GPU allocates from host memory at once, so a
// pool's attributes change nothing.
using cudaMemPool_t = void*;
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold };
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  static int the_pool = 0;
  *pool = &the_pool;
  return hipSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) {
  return hipSuccess;
}
// HIP-CPU's hipMallocAsync sets *p only when the stream reaches the allocation, so the caller
// would hold a null pointer; CUDA returns it at once, usable by work queued after it. An
// immediate allocation is valid earlier than stream order needs, so it keeps that contract.
template <typename T>
cudaError_t cudaMallocAsync(T** p, size_t bytes, cudaStream_t) {
  return mlps::emulate::counted(hipMalloc(reinterpret_cast<void**>(p), bytes),
                                mlps::emulate::tally().allocations);
}
// The free is queued on the stream, after the work that may still read the memory.
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  return mlps::emulate::counted(hipFreeAsync(p, s), mlps::emulate::tally().frees);
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t s) {
  return hipMemcpyAsync(dst, src, bytes, kind, s);
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind,
                                     cudaStream_t s) {
  return hipMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, s);
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  return hipMemsetAsync(p, value, bytes, s);
}

// Streams and events.
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return hipStreamCreate(s); }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, hipStreamFlags flags) {
  return hipStreamCreateWithFlags(s, flags);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) { return hipStreamDestroy(s); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return mlps::emulate::counted(hipStreamSynchronize(s), mlps::emulate::tally().host_syncs);
}
// HIP-CPU queues a task that blocks until the event completes, but it runs the queues of all
// streams from one processor thread, so that task can block the very task that would record the
// event on the other stream (a deadlock). Waiting on the host instead orders everything queued
// on the stream afterwards after the event, which is at least what CUDA promises.
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned int) {
  return hipEventSynchronize(e);
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { return hipEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { return hipEventDestroy(e); }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return hipEventRecord(e, s); }
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return mlps::emulate::counted(hipEventSynchronize(e), mlps::emulate::tally().host_syncs);
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  return hipEventElapsedTime(ms, a, b);
}

// Device intrinsics HIP-CPU lacks.
inline unsigned int __float_as_uint(float v) { return std::bit_cast<unsigned int>(v); }
inline long long __double_as_longlong(double v) { return std::bit_cast<long long>(v); }

namespace mlps::emulate {

// HIP-CPU's shuffles are 64 lanes wide and synchronise the whole block (a round-robin over
// every fiber of the block), so a shuffle that only some warps execute, as the second stage of
// a block reduction in warp 0, desynchronises the block. CUDA's are 32 lanes wide and involve
// the calling warp only: this step yields round-robin among the 32 fibers of the caller's warp.
inline void warp_step(uint32_t self, uint32_t threads) {
  using namespace hip::detail;
  const uint32_t base = self / 32 * 32;
  const uint32_t lanes = std::min<uint32_t>(32, threads - base);
  if (lanes == 1) return;
  this_tile::has_barrier = true;  // tells the launcher that this block's fibers interleave
  Fiber::yield(Tile::fibers()[base + (self - base + 1) % lanes]);
}

// __shfl_down_sync over all 32 lanes: lane l receives lane l + delta's value, or keeps its own
// when l + delta is past the warp. The fibers of a block share one OS thread, so a thread_local
// array indexed by thread is the warp's exchange buffer.
template <typename T>
T shuffle_down_32(T value, unsigned int delta) {
  using namespace hip::detail;
  thread_local std::array<T, 1024> slots;
  const uint32_t self = id(Fiber::this_fiber());
  const uint32_t threads = count(Tile::this_tile().dimensions());
  slots[self] = value;
  warp_step(self, threads);
  const uint32_t source = self + delta;
  const T result = self % 32 + delta < 32 && source < threads ? slots[source] : value;
  warp_step(self, threads);  // nobody overwrites a slot before every lane has read it
  return result;
}

}  // namespace mlps::emulate

template <typename T>
T __shfl_down_sync(unsigned int /*mask: every lane, as the project uses it*/, T value,
                   unsigned int delta) {
  return mlps::emulate::shuffle_down_32(value, delta);
}
