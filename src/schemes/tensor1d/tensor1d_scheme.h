#pragma once
// bin/tensor1d: 1D tensor parallelism (Megatron-LM, sequence parallelism).
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor1d_scheme();

}  // namespace mlps
