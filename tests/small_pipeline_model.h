#pragma once
// The tiny FC_Net the pipeline tests partition and chain (S 5, H 6, F 12).
#include "src/model_config.h"

namespace mlps {

inline ModelConfig small_model(int64_t layers, BlockKind block = BlockKind::residual_mlp) {
  ModelConfig c;
  c.image_size = 5;
  c.hidden = 6;
  c.ffn_mult = 2;
  c.layers = layers;
  c.block = block;
  return c;
}

}  // namespace mlps
