#pragma once
// bin/tensor3d: AxoNN-style 3D tensor parallelism (G_r × G_c × G_d = --tp-dims x,y,z), every
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_tensor3d_scheme();

}  // namespace mlps
