#include "src/device/device.h"

#include "src/base/errors.h"

namespace mlps {

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

}  // namespace mlps
