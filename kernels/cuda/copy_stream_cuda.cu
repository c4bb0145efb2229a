// The copy stream of the CUDA backend: copies between pinned host memory and the device on a
// stream of their own, so that they overlap the kernel stream's work, ordered against it by
// events (kernels.h).
#include "kernels/cuda/cuda_context.h"
#include "kernels/kernels.h"

namespace mlps::cuda {

namespace {
cudaEvent_t as_event(void* event) { return static_cast<cudaEvent_t>(event); }
}  // namespace

void copies_wait_for_kernels(void* event) {
  MLPS_CUDA_CHECK(cudaEventRecord(as_event(event), detail::stream()));
  MLPS_CUDA_CHECK(cudaStreamWaitEvent(detail::copy_stream(), as_event(event), 0));
}

void kernels_wait_for_copies(void* event) {
  MLPS_CUDA_CHECK(cudaEventRecord(as_event(event), detail::copy_stream()));
  MLPS_CUDA_CHECK(cudaStreamWaitEvent(detail::stream(), as_event(event), 0));
}

void copy_to_host_on_copies(void* pinned_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(cudaMemcpyAsync(pinned_dst, src, bytes, cudaMemcpyDeviceToHost,
                                  detail::copy_stream()));
}

void copy_to_device_on_copies(void* dst, const void* pinned_src, size_t bytes) {
  if (bytes == 0) return;
  MLPS_CUDA_CHECK(cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice,
                                  detail::copy_stream()));
}

void event_record_on_copies(void* event) {
  MLPS_CUDA_CHECK(cudaEventRecord(as_event(event), detail::copy_stream()));
}

void event_synchronize(void* event) { MLPS_CUDA_CHECK(cudaEventSynchronize(as_event(event))); }

}  // namespace mlps::cuda
