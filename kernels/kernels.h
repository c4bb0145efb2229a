#pragma once
// The two backends of the Device seam: mlps::cpu (OpenBLAS + loops) and mlps::cuda (cuBLAS +
// CUDA kernels). Both declare the same functions from kernel_api.inc.
#include <cstddef>
#include <cstdint>

namespace mlps {

// The 16-bit storage types (kernels/half_types.h); the kernel interface only passes pointers.
struct bf16;
struct fp16;

// What a kernel keeps beside tensors stored as T: LayerNorm's row statistics, the softmax's
// probabilities and losses, and the gradients of biases and LayerNorm's γ and β. fp32 for the
// 16-bit storage types (mixed precision accumulates and keeps these in fp32), else T itself.
template <typename T>
struct accumulator {
  using type = T;
};
template <>
struct accumulator<bf16> {
  using type = float;
};
template <>
struct accumulator<fp16> {
  using type = float;
};
template <typename T>
using Acc = typename accumulator<T>::type;

// One Adam step's scalars, shared by every parameter tensor of the step.
struct AdamStep {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double bias_correction1 = 1.0;  // 1 − beta1^t
  double bias_correction2 = 1.0;  // 1 − beta2^t
  double grad_scale = 1.0;        // gradients are multiplied by this first (1/loss scale)
};

// What an optimizer kernel leaves in the gradient it reads. `zeroed` writes zeros in the same
// pass, while the gradient's lines are in cache: the next backward then adds its weight
// gradients into them (GEMM beta = 1) and no longer zeroes them in a pass of its own.
enum class GradAfterUpdate { kept, zeroed };

// How activations, weights and gradients are stored: fp32 (or fp64) as computed, or rounded to
// 16 bits after every kernel that produces them (mixed precision; accumulation stays fp32).
enum class StorageFormat { full, bf16, fp16 };

// What an fp32 GEMM's multiplications may round their inputs to; sums stay fp32. fp32: true
// fp32, set explicitly on cuBLAS's handle so that no environment variable decides. tf32: TF32
// tensor cores (--math tf32; inputs rounded to 10-bit mantissas). bf16/fp16: mixed precision,
// whose GEMM inputs already hold 16-bit values, so tensor cores multiply them exactly. fp64
// GEMMs are always exact.
enum class GemmCompute { fp32, tf32, bf16, fp16 };
inline const char* to_string(GemmCompute compute) {
  constexpr const char* kNames[] = {"fp32", "tf32", "bf16", "fp16"};  // in the enum's order
  return kNames[static_cast<int>(compute)];
}
// What float GEMMs multiply in for tensors stored in `storage`: the 16-bit format's own, else
// `math` (fp32 or tf32, --math). The one rule Device, the options and the planner follow.
constexpr GemmCompute gemm_compute(StorageFormat storage, GemmCompute math) {
  return storage == StorageFormat::bf16   ? GemmCompute::bf16
         : storage == StorageFormat::fp16 ? GemmCompute::fp16
                                          : math;
}
// Bytes of one element as a communicator in `wire` format sends it: 16-bit formats carry 2, a
// full one the computed type's `full_bytes`. The one rule the trainers, the volume reports and
// the planner count wire bytes by.
constexpr size_t wire_bytes(StorageFormat wire, size_t full_bytes) {
  return wire == StorageFormat::full ? full_bytes : 2;
}

// Calls a process made of the GPU runtime that a step must not need (allocations, frees, host
// synchronisations) and the kernels it launched (the project's own, cuBLAS's GEMMs and NCCL's
// collectives). Only the emulated GPU build's runtime counts them (kernels/emulate); a real
// CUDA build reports counted = false rather than pay for interposing on the runtime.
struct RuntimeCounts {
  bool counted = false;
  int64_t launches = 0;
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t host_syncs = 0;
};

namespace cpu {
#include "kernel_api.inc"
// Threads per rank: OpenBLAS's, which the kernels' loops share (kernels/cpu/parallel_loops.h).
int thread_count();
void set_thread_count(int threads);
}  // namespace cpu

namespace cuda {
#include "kernel_api.inc"
// True when the CUDA runtime reports at least one usable GPU; a missing driver means false.
bool gpu_available();
// CUDA runtime and driver versions and the name of the GPU current when first called (the
// rank's bound GPU), for result files.
const char* runtime_version_string();
// Events on the kernel stream, for phase timing without synchronising mid-step.
void* event_create();
void event_record(void* event);
double event_elapsed_seconds(void* start, void* end);  // waits for end
void event_destroy(void* event);
// The copy stream: a second stream for copies between pinned host memory and the device that
// overlap the kernels (offloaded optimizer state, src/optim/device_exchange.h). It is ordered
// against the kernel stream by events alone, never by the host.
void copies_wait_for_kernels(void* event);  // records `event` on the kernels; copies wait for it
void kernels_wait_for_copies(void* event);  // records `event` on the copies; kernels wait for it
void copy_to_host_on_copies(void* pinned_dst, const void* src, size_t bytes);
void copy_to_device_on_copies(void* dst, const void* pinned_src, size_t bytes);
void event_record_on_copies(void* event);
void event_synchronize(void* event);  // the host waits for `event`
// The runtime's counts since the process started (counted only in the emulated GPU build).
RuntimeCounts runtime_counts();
}  // namespace cuda

}  // namespace mlps
