#pragma once
// An element of a tensor stored as T, as the kernels of both backends read and write it: a float
// or a double is itself; a bf16 or fp16 (kernels/half_types.h) widens exactly to float and is
// written by rounding to nearest even, from a double by way of float, which is how the emulation
// rounds a float kernel's output. So a kernel written once over widen/narrow gives, for 16-bit
// T, its float twin's result rounded once, bit for bit, and for float and double is unchanged.
// Arithmetic stays in the kernels' own float or double.
#include <type_traits>

#include "kernels/half_types.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define MLPS_HOST_DEVICE __host__ __device__
#else
#define MLPS_HOST_DEVICE
#endif

namespace mlps {

template <typename T>
inline constexpr bool is_16bit_v = std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;

MLPS_HOST_DEVICE inline float widen(float x) { return x; }
MLPS_HOST_DEVICE inline double widen(double x) { return x; }
MLPS_HOST_DEVICE inline float widen(bf16 x) {
#ifdef __CUDA_ARCH__
  return __bfloat162float(__ushort_as_bfloat16(x.bits));
#else
  return to_float(x);
#endif
}
MLPS_HOST_DEVICE inline float widen(fp16 x) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(x.bits));
#else
  return to_float(x);
#endif
}

// The value v (float or double) stored as T.
template <typename T, typename V>
MLPS_HOST_DEVICE inline T narrow(V v) {
  if constexpr (std::is_same_v<T, bf16>) {
#ifdef __CUDA_ARCH__
    return {__bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)))};
#else
    return from_float<bf16>(static_cast<float>(v));
#endif
  } else if constexpr (std::is_same_v<T, fp16>) {
#ifdef __CUDA_ARCH__
    return {__half_as_ushort(__float2half_rn(static_cast<float>(v)))};
#else
    return from_float<fp16>(static_cast<float>(v));
#endif
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace mlps
