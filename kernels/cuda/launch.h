#pragma once
// One spelling for a kernel launch, so that the sources stay CUDA and also compile as C++ in
// the emulated-GPU build (HIP-CPU under g++ has no <<<...>>> syntax). The kernel must be one
// macro argument: a template kernel with several template arguments goes through a local
// function pointer.
#ifdef MLPSCALE_CUDA_EMULATE
#define MLPS_LAUNCH(kernel, blocks, threads, shared_bytes, stream, ...)                \
  do {                                                                                  \
    mlps::emulate::tally().launches.fetch_add(1, std::memory_order_relaxed);            \
    hipLaunchKernelGGL(kernel, blocks, threads, shared_bytes, stream, __VA_ARGS__);     \
  } while (0)
#else
#define MLPS_LAUNCH(kernel, blocks, threads, shared_bytes, stream, ...) \
  kernel<<<blocks, threads, shared_bytes, stream>>>(__VA_ARGS__)
#endif
