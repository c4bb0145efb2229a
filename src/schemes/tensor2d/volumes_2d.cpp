#include "src/schemes/tensor2d/volumes_2d.h"

#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const GridShape& shape, size_t element_bytes,
                                               const GridPosition& at, bool inference) {
  const auto e = static_cast<double>(element_bytes);
  const int64_t q = shape.q;
  const auto d = [](int64_t x) { return static_cast<double>(x); };
  const double b = d(part_size(global_batch, shape.dp * q, at.replica * q + at.row));
  const bool training = !inference;
  // Checkpointing reruns every block's forward (not the embed's or the classifier's) once.
  const double block_forwards = training && model.checkpoint_activations ? 2 : 1;
  std::map<std::string, double> v;
  if (training && shape.dp > 1)
    v["allreduce:data"] = d(ShardLayout(model, shape.q, at.row, at.column).total()) * e;
  if (q == 1) return v;  // a 1 × 1 grid communicates nothing within the replica
  const std::vector<LinearShape> linears = linear_shapes(model);
  double vector_elements = 0;
  for (size_t index = 0; index < linears.size(); ++index) {
    const LinearShape& s = linears[index];
    const bool embed = index == 0;
    const bool in_block = !embed && index + 1 < linears.size();
    const double forwards = in_block ? block_forwards : 1;
    const double k0 = d(largest_part(s.in, q));
    const double n = d(part_size(s.out, q, at.column));
    v["broadcast:row"] += forwards * b * d(s.in) * e;
    v["broadcast:col"] += forwards * n * d(s.in) * e;
    vector_elements += n;
    if (inference) continue;
    v["broadcast:row"] += b * d(s.in) * e;  // X blocks for dW
    v["reduce_scatter:col"] += d(q) * n * k0 * e;
    if (embed) continue;  // no dX
    v["broadcast:col"] += n * d(s.in) * e;  // W blocks for dX
    v["reduce_scatter:row"] += d(q) * b * k0 * e;
  }
  v["allgather:row"] = d(q) * b * d(largest_part(model.classes, q)) * e;
  if (model.block == BlockKind::residual_mlp && model.layers > 0) {
    const double blocks = d(model.layers);
    v["allgather:row"] += block_forwards * blocks * d(q) * 2 * b * e;
    if (training) {
      v["allreduce:row"] = blocks * 2 * b * e;
      vector_elements += blocks * 2 * d(part_size(model.hidden, q, at.column));
    }
  }
  if (training) v["allreduce:col"] = vector_elements * e;
  return v;
}

}  // namespace mlps
