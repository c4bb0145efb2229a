// GPU discovery, version strings, event timing and runtime counts of the CUDA backend.
#include <string>

#include "kernels/cuda/cuda_context.h"
#include "kernels/kernels.h"

namespace mlps::cuda {
namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string describe_runtime() {
  int runtime = 0;
  int driver = 0;
  std::string text = "CUDA runtime ";
  text += cudaRuntimeGetVersion(&runtime) == cudaSuccess ? version_text(runtime) : "unknown";
  // cudaDriverGetVersion reports 0 when no driver is installed.
  text += ", driver ";
  text += cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? version_text(driver)
                                                                      : "none";
  // The GPU this rank is bound to (cudaSetDevice before the first call), not always device 0.
  int device = 0;
  cudaDeviceProp prop{};
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaGetDeviceProperties(&prop, device);
  if (status == cudaSuccess) {
    text += ", device " + std::to_string(device) + ": ";
    text += prop.name;
  } else {
    text += ", no device (";
    text += cudaGetErrorString(status);
    text += ")";
  }
  (void)cudaGetLastError();
  return text;
}

}  // namespace

bool gpu_available() {
  // Any error (no driver, driver too old, no device) means no GPU; clear it so that it does
  // not resurface at a later error check.
  static const bool available = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    return status == cudaSuccess && count > 0;
  }();
  return available;
}

const char* runtime_version_string() {
  static const std::string text = describe_runtime();
  return text.c_str();
}

void* event_create() {
  cudaEvent_t event = nullptr;
  MLPS_CUDA_CHECK(cudaEventCreate(&event));
  return event;
}

void event_record(void* event) {
  MLPS_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), detail::stream()));
}

double event_elapsed_seconds(void* start, void* end) {
  MLPS_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(end)));
  float ms = 0.0f;
  MLPS_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                       static_cast<cudaEvent_t>(end)));
  return static_cast<double>(ms) * 1e-3;
}

// Never throws, for the same reason as device_free.
void event_destroy(void* event) {
  if (event && cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess)
    (void)cudaGetLastError();
}

RuntimeCounts runtime_counts() {
#ifdef MLPSCALE_CUDA_EMULATE
  const auto& t = emulate::tally();
  return {true, t.launches.load(), t.allocations.load(), t.frees.load(), t.host_syncs.load()};
#else
  return {};
#endif
}

}  // namespace mlps::cuda
