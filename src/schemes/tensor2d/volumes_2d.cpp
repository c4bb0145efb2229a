#include "src/schemes/tensor2d/volumes_2d.h"

#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const GridShape& shape, size_t element_bytes,
                                               const GridPosition& at) {
  const auto e = static_cast<double>(element_bytes);
  const int64_t q = shape.q;
  const auto d = [](int64_t x) { return static_cast<double>(x); };
  const double b = d(part_size(global_batch, shape.dp * q, at.replica * q + at.row));
  std::map<std::string, double> v;
  if (shape.dp > 1)
    v["allreduce:data"] = d(ShardLayout(model, shape.q, at.row, at.column).total()) * e;
  if (q == 1) return v;  // a 1 × 1 grid communicates nothing within the replica
  double vector_elements = 0;
  bool first = true;
  for (const LinearShape& s : linear_shapes(model)) {
    const double k0 = d(largest_part(s.in, q));
    const double n = d(part_size(s.out, q, at.column));
    v["broadcast:row"] += 2 * b * d(s.in) * e;
    v["broadcast:col"] += (first ? 1 : 2) * n * d(s.in) * e;
    if (!first) v["reduce_scatter:row"] += d(q) * b * k0 * e;
    v["reduce_scatter:col"] += d(q) * n * k0 * e;
    vector_elements += n;
    first = false;
  }
  v["allgather:row"] = d(q) * b * d(largest_part(model.classes, q)) * e;
  if (model.block == BlockKind::residual_mlp && model.layers > 0) {
    const double blocks = d(model.layers);
    v["allgather:row"] += blocks * d(q) * 2 * b * e;
    v["allreduce:row"] = blocks * 2 * b * e;
    vector_elements += blocks * 2 * d(part_size(model.hidden, q, at.column));
  }
  v["allreduce:col"] = vector_elements * e;
  return v;
}

}  // namespace mlps
