#include "kernels/cuda/device_select.h"

#include <cstdio>

#include "kernels/cuda/cuda_context.h"

namespace mlps::cuda {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error here
    return 0;
  }
  return count;
}

void set_current_device(int device) { MLPS_CUDA_CHECK(cudaSetDevice(device)); }

std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  MLPS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::string text;
  for (const char byte : prop.uuid.bytes) {
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(byte));
    text += hex;
  }
  return text;
}

size_t free_device_memory() {
  size_t free = 0, total = 0;
  MLPS_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace mlps::cuda
