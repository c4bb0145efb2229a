#pragma once
// Kernels for activations whose columns are sliced over ranks (see sliced_rows_api.inc): the
// CPU twins in kernels/cpu/sliced_rows_cpu.cpp, the CUDA ones in kernels/cuda/sliced_rows_cuda.cu.
#include <cstdint>

#include "kernels/kernels.h"  // Acc<T>

namespace mlps {

namespace cpu {
#include "kernels/sliced_rows_api.inc"
}  // namespace cpu

namespace cuda {
#include "kernels/sliced_rows_api.inc"
}  // namespace cuda

}  // namespace mlps
