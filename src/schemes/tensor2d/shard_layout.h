#pragma once
// Where rank (i, j) of a q × q grid keeps its shard of every FcNet tensor, in one flat buffer
// (docs/tensor2d.md). No padding: the q² shards tile every tensor, so
// shard sizes differ between ranks when q does not divide a dimension. Per unit (embed, each
// block, the classifier) the weight blocks come first, then the vector slices, so that a unit's
// vectors (summed down the grid column) and a whole unit (summed over replicas) are contiguous.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/model/parameter.h"
#include "src/model/model_config.h"

namespace mlps {

struct TensorShard {
  std::string name;  // FcNet's name, tensor id and initialiser
  int64_t tensor_id = 0;
  InitKind init = InitKind::zeros;
  int64_t fan_in = 1;
  int64_t global_rows = 0, global_cols = 0;
  bool matrix = false;             // a Linear weight block, else a vector part
  int64_t offset = 0;              // in the flat buffer
  int64_t rows = 0, cols = 0;      // stored shape [rows × cols], row-major
  int64_t row0 = 0, col0 = 0;      // global position of stored element (0, 0)
  int64_t size() const { return rows * cols; }
};

struct UnitRange {
  int64_t offset = 0, count = 0;                // the whole unit
  int64_t vector_offset = 0, vector_count = 0;  // its vector slices
};

class ShardLayout {
 public:
  // cut(t) narrows t, the whole tensor, to this rank's block (row0, rows, col0, cols). The
  // layout of a q × q grid's rank (i, j) is one such rule; bin/tensor1d's shards are another.
  ShardLayout(const ModelConfig& model, const std::function<void(TensorShard&)>& cut);
  ShardLayout(const ModelConfig& model, int q, int grid_row, int grid_col);

  // In FcNet's tensor order.
  const std::vector<TensorShard>& tensors() const { return tensors_; }
  const TensorShard& find(const std::string& name) const;
  const std::vector<UnitRange>& units() const { return units_; }
  int64_t total() const { return total_; }
  int64_t matrix_elements() const;  // weight blocks only (they shrink as about 1/q²)

  // Initial values of this rank's shards, from the counter-based initialiser.
  template <typename T>
  std::vector<T> initial_values(uint64_t seed) const;

 private:
  std::vector<TensorShard> tensors_;
  std::vector<UnitRange> units_;
  int64_t total_ = 0;
};

}  // namespace mlps
