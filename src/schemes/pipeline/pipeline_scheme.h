#pragma once
// bin/pipeline: pipeline parallelism (GPipe, 1F1B, interleaved, ZB-H1, ZB-V).
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_pipeline_scheme();

}  // namespace mlps
