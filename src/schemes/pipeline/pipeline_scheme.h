#pragma once
// bin/pipeline: pipeline (inter-layer) parallelism, GPipe, 1F1B, interleaved 1F1B, ZB-H1 or
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_pipeline_scheme();

}  // namespace mlps
