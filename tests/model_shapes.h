#pragma once
// Small FC_Net shapes for the tests in one call: image side S, hidden H, layers L, F = ffn_mult·H.
#include "src/model/model_config.h"

namespace mlps {

inline ModelConfig model_shape(int64_t image_size, int64_t hidden, int64_t layers,
                               int64_t ffn_mult = 4, BlockKind block = BlockKind::residual_mlp) {
  ModelConfig c;
  c.image_size = image_size;
  c.hidden = hidden;
  c.layers = layers;
  c.ffn_mult = ffn_mult;
  c.block = block;
  return c;
}

}  // namespace mlps
