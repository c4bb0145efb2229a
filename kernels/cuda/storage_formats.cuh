#pragma once
// The 16-bit storage formats on the GPU: a float to the format's bits and back with CUDA's own
// round-to-nearest-even conversions, for the rounding kernels and the optimizer's rounded copy.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace mlps::cuda::detail {

struct Bf16 {
  __device__ static unsigned short to_bits(float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
  __device__ static float from_bits(unsigned short b) {
    return __bfloat162float(__ushort_as_bfloat16(b));
  }
};

struct Fp16 {
  __device__ static unsigned short to_bits(float v) { return __half_as_ushort(__float2half_rn(v)); }
  __device__ static float from_bits(unsigned short b) {
    return __half2float(__ushort_as_half(b));
  }
};

}  // namespace mlps::cuda::detail
