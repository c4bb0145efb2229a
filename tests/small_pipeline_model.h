#pragma once
// The tiny FC_Net the pipeline tests partition and chain (S 5, H 6, F 12).
#include "tests/model_shapes.h"

namespace mlps {

inline ModelConfig small_model(int64_t layers, BlockKind block = BlockKind::residual_mlp) {
  return model_shape(5, 6, layers, 2, block);
}

}  // namespace mlps
