#pragma once
// Deterministic, learnable MNIST-like data without any files: ten digit-shaped glyphs drawn as
// strokes on a 28 x 28 canvas, each sample a jittered copy (shift, rotation, scale, stroke
// width and brightness, pixel noise). A sample is a pure function of (seed, split, index), so
// any rank makes any sample alone, in any order, with identical results.
#include <cstdint>
#include <memory>

#include "src/data/dataset.h"

namespace mlps {

inline constexpr int kSyntheticSide = 28;
inline constexpr int64_t kSyntheticTrainSize = 60000;
inline constexpr int64_t kSyntheticTestSize = 10000;

// The seed also bends each class's glyph a little, so different seeds give different data.
std::unique_ptr<Dataset> make_synthetic_dataset(uint64_t seed);

}  // namespace mlps
