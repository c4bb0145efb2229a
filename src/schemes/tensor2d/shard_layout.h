#pragma once
// Where rank (i, j) of a q × q grid keeps its shard of every FcNet tensor, in one flat buffer.
//   Linear weight W [out × in]: block W[j·n .., i·k ..] stored [n × k], k = in/q, n = ⌈out/q⌉
//     (rows past `out` are zero padding: only the classifier's 10 outputs may need it).
//   Bias [out], LayerNorm γ, β [H]: slice j of ⌈size/q⌉ elements, the same on every grid row.
// Per unit (embed, each block, the classifier, in forward order) the unit's weight blocks come
// first, then its vector slices, so that a unit's vectors (summed down the grid column after
// its backward) and a whole unit (summed over replicas) are contiguous ranges.
#include <cstdint>
#include <string>
#include <vector>

#include "src/model/parameter.h"
#include "src/model_config.h"

namespace mlps {

struct TensorShard {
  std::string name;  // FcNet's name, tensor id and initialiser
  int64_t tensor_id = 0;
  InitKind init = InitKind::zeros;
  int64_t fan_in = 1;
  int64_t global_rows = 0, global_cols = 0;
  bool matrix = false;             // a Linear weight (block of rows and columns), else a vector slice
  int64_t offset = 0;              // in the flat buffer
  int64_t rows = 0, cols = 0;      // stored shape (padding included)
  int64_t row0 = 0, col0 = 0;      // global position of stored element (0, 0)
  int64_t valid_rows = 0, valid_cols = 0;  // the part inside the tensor
  int64_t size() const { return rows * cols; }
};

struct UnitRange {
  int64_t offset = 0, count = 0;                // the whole unit
  int64_t vector_offset = 0, vector_count = 0;  // its vector slices
};

class ShardLayout {
 public:
  ShardLayout(const ModelConfig& model, int q, int grid_row, int grid_col);

  // In FcNet's tensor order.
  const std::vector<TensorShard>& tensors() const { return tensors_; }
  const TensorShard& find(const std::string& name) const;
  const std::vector<UnitRange>& units() const { return units_; }
  int64_t total() const { return total_; }
  int64_t matrix_elements() const;  // weight blocks only (they shrink as 1/q²)

  // Initial values of this rank's shards (padding zero), from the counter-based initialiser.
  template <typename T>
  std::vector<T> initial_values(uint64_t seed) const;

 private:
  std::vector<TensorShard> tensors_;
  std::vector<UnitRange> units_;
  int64_t total_ = 0;
};

}  // namespace mlps
