#pragma once
// The weight update fused into the backward pass (serial training on the CPU, where the update
// is bound by memory bandwidth). A Linear makes its dW one block of rows at a time, into a
// block the update owns, and hands each block over at once, while it is still in cache: the
// gradient never goes to memory and back. That saves 16 of the 40 bytes per weight a step moves
// otherwise (zeroing dW, the GEMM's read and write of it, the optimizer's read of it). The
// optimizer implements it (src/optim/optimizer.h).
#include <algorithm>
#include <cstdint>

#include "src/device/device.h"
#include "src/model/model_config.h"

namespace mlps {

// Where the update is fused when asked: on the CPU (a GPU is served better by one large GEMM
// than by cache-sized blocks) in full precision (16-bit storage's master copies and fp16 loss
// scaling need every gradient before the update).
inline bool fused_update_applies(DeviceKind device, StorageFormat storage) {
  return device == DeviceKind::cpu && storage == StorageFormat::full;
}

// The block's size: 1 MiB stays in cache (L2 or L3) between the GEMM and the update;
// a block holds at least one row of the widest weight.
constexpr int64_t kFusedBlockBytes = int64_t{1} << 20;
inline int64_t fused_block_elements(int64_t widest_row, int64_t element_bytes) {
  return std::max(kFusedBlockBytes / element_bytes, widest_row);
}

// The block for a model: rows up to its widest Linear input (the image, H or F).
inline int64_t fused_block_elements(const ModelConfig& m, int64_t element_bytes) {
  return fused_block_elements(std::max({m.input_features(), m.hidden, m.ffn_hidden()}),
                              element_bytes);
}

template <typename T>
class FusedWeightUpdate {
 public:
  virtual ~FusedWeightUpdate() = default;
  // The block's storage, and how many rows of a [rows × width] gradient it holds (≥ 1).
  virtual T* block() = 0;
  virtual int64_t block_rows(int64_t width) const = 0;
  // Updates elements [first, first + count) of the tensor registered at `value` from block().
  virtual void apply_block(const T* value, int64_t first, int64_t count) = 0;
};

}  // namespace mlps
