// The emulated GPU's properties (see include/cuda_runtime.h): HIP-CPU's, plus a UUID naming
// this process, since each process's emulated GPU is its own memory.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return hipErrorInvalidValue;
  hipDeviceProp_t hip{};
  if (const cudaError_t status = hipGetDeviceProperties(&hip, device); status != hipSuccess)
    return status;
  std::snprintf(prop->name, sizeof(prop->name), "GPU emulated by HIP-CPU on %.200s", hip.name);
  prop->totalGlobalMem = hip.totalGlobalMem;
  prop->multiProcessorCount = hip.multiProcessorCount;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string identity = std::string(host) + ":" + std::to_string(getpid());
  // Two FNV-1a hashes of the identity fill the 16 bytes.
  for (int half = 0; half < 2; ++half) {
    uint64_t hash = 14695981039346656037ull + static_cast<uint64_t>(half);
    for (const char ch : identity) hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    std::memcpy(prop->uuid.bytes + 8 * half, &hash, 8);
  }
  return hipSuccess;
}
