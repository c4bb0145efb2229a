#include "src/schemes/tensor2d/volumes_2d.h"

#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const GridShape& shape, size_t element_bytes) {
  const auto e = static_cast<double>(element_bytes);
  const double q = shape.q;
  const double b = static_cast<double>(global_batch / (int64_t{shape.dp} * shape.q));
  std::map<std::string, double> v;
  if (shape.dp > 1)
    v["allreduce:data"] = static_cast<double>(ShardLayout(model, shape.q, 0, 0).total()) * e;
  if (shape.q == 1) return v;  // a 1 × 1 grid communicates nothing within the replica
  double vector_elements = 0;
  bool first = true;
  for (const LinearShape& s : linear_shapes(model)) {
    const double k = static_cast<double>(s.in / shape.q);
    const double n = static_cast<double>((s.out + shape.q - 1) / shape.q);
    v["broadcast:row"] += 2 * q * b * k * e;
    v["broadcast:col"] += (first ? 1 : 2) * q * n * k * e;
    if (!first) v["reduce_scatter:row"] += q * b * k * e;
    v["reduce_scatter:col"] += q * n * k * e;
    vector_elements += n;
    first = false;
  }
  const double classes = static_cast<double>((model.classes + shape.q - 1) / shape.q);
  v["allgather:row"] = q * b * classes * e;
  if (model.block == BlockKind::residual_mlp && model.layers > 0) {
    const auto blocks = static_cast<double>(model.layers);
    v["allgather:row"] += blocks * q * 2 * b * e;
    v["allreduce:row"] = blocks * 2 * b * e;
    vector_elements += blocks * 2 * static_cast<double>(model.hidden / shape.q);
  }
  v["allreduce:col"] = vector_elements * e;
  return v;
}

}  // namespace mlps
