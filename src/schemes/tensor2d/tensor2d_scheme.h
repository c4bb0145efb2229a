#pragma once
// bin/tensor2d: 2D tensor parallelism (SUMMA / Optimus): every Linear a SUMMA product on a
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor2d_scheme();

}  // namespace mlps
