#pragma once
// The emulated-GPU build: CUDA's fp16 conversions come from HIP-CPU (over the `half` library).
#include <hip/hip_fp16.h>
