#pragma once
// bin/data: data parallelism (DDP and ZeRO 1-3, hybrid sharding).
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_data_scheme();

}  // namespace mlps
