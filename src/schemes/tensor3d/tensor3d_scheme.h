#pragma once
// bin/tensor3d: 3D tensor parallelism (AxoNN).
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor3d_scheme();

}  // namespace mlps
