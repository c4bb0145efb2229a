// Memory of the CUDA backend. Everything is ordered on the kernel stream; copies that touch
// host memory wait for completion, so the caller may reuse or read its buffer on return, but
// for the queued ones between pinned staging and the device, which do not wait.
#include "kernels/aliasing.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/kernels.h"

namespace mlps::cuda {

void* device_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  MLPS_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

// Never throws: it runs from destructors, also while an earlier CUDA error unwinds the stack,
// and a second exception there would hide the first one behind std::terminate.
void device_free(void* p) {
  if (p && cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

void copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(
      cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, detail::stream()));
  MLPS_CUDA_CHECK(cudaStreamSynchronize(detail::stream()));
}

void copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, detail::stream()));
  MLPS_CUDA_CHECK(cudaStreamSynchronize(detail::stream()));
}

// Pinned: a copy from or to it runs on the stream without the host waiting (from pageable
// memory cudaMemcpyAsync waits for the stream first).
void* host_staging_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  MLPS_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

// Never throws, as device_free.
void host_staging_free(void* p) {
  if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

void copy_to_device_queued(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(
      cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, detail::stream()));
}

void copy_to_host_queued(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, detail::stream()));
}

void copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  // cudaMemcpy between overlapping ranges is undefined (the CPU twin checks the same).
  mlps::detail::require_disjoint(dst, src, bytes, "copy_on_device", "source and destination");
  MLPS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, detail::stream()));
}

void fill_zero(void* p, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, detail::stream()));
}

void synchronize() { MLPS_CUDA_CHECK(cudaStreamSynchronize(detail::stream())); }

}  // namespace mlps::cuda
