#pragma once
// bin/tensor1d: Megatron-LM tensor parallelism (column-parallel then row-parallel Linear, one
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor1d_scheme();

}  // namespace mlps
