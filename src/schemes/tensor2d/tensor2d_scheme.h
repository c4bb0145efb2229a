#pragma once
// bin/tensor2d: 2D tensor parallelism (SUMMA).
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor2d_scheme();

}  // namespace mlps
