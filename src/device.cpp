#include "src/device.h"

#include "src/errors.h"

namespace mlps {

const char* to_string(DeviceKind kind) { return kind == DeviceKind::cuda ? "cuda" : "cpu"; }

#ifdef MLPSCALE_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

DeviceKind resolve_device(const std::string& requested) {
  const bool gpu = kBuiltWithCuda && cuda::gpu_available();
  if (requested == "auto") return gpu ? DeviceKind::cuda : DeviceKind::cpu;
  if (requested == "cpu") return DeviceKind::cpu;
  if (requested == "cuda") {
    if (!kBuiltWithCuda)
      throw InputError("--device cuda: this build has no CUDA backend (rebuild with CUDA=1)");
    if (!gpu) throw InputError("--device cuda: no usable GPU is visible to this process");
    return DeviceKind::cuda;
  }
  throw InputError("--device must be auto, cpu or cuda, not '" + requested + "'");
}

void* Device::allocate(size_t bytes) {
  void* p = MLPS_ON_BACKEND(device_alloc, bytes);
  current_bytes_ += bytes;
  if (current_bytes_ > peak_bytes_) peak_bytes_ = current_bytes_;
  return p;
}

void Device::release(void* p, size_t bytes) {
  if (!p) return;
  MLPS_ON_BACKEND(device_free, p);
  current_bytes_ -= bytes;
}

}  // namespace mlps
