#include "src/schemes/tensor2d/tensor2d_volumes.h"

#include "src/base/balanced_split.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const Tensor2dGrid& shape, size_t element_bytes,
                                               const GridPosition& at, bool inference,
                                               CommCalls* calls) {
  const auto e = static_cast<double>(element_bytes);
  const int64_t q = shape.q;
  const auto d = [](int64_t x) { return static_cast<double>(x); };
  const double b = d(part_size(global_batch, shape.dp * q, at.replica * q + at.row));
  const bool training = !inference;
  // Checkpointing reruns every block's forward (not the embed's or the classifier's) once.
  const double block_forwards = training && model.checkpoint_activations ? 2 : 1;
  std::map<std::string, double> v;
  const auto add = [&](const std::string& kind, double bytes, double count) {
    add_volume(v, calls, kind, bytes, count);
  };
  // Gradients: one all-reduce per unit, as backward finishes it.
  if (training && shape.dp > 1)
    add("allreduce:data", d(ShardLayout(model, shape.q, at.row, at.column).total()) * e,
        unit_count(model));
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
    // A SUMMA product broadcasts one panel per grid step, q in all.
    add("broadcast:row", forwards * b * d(s.in) * e, forwards * d(q));
    add("broadcast:col", forwards * n * d(s.in) * e, forwards * d(q));
    vector_elements += n;
    if (inference) continue;
    add("broadcast:row", b * d(s.in) * e, d(q));  // X blocks for dW
    add("reduce_scatter:col", d(q) * n * k0 * e, 1);
    if (embed) continue;  // no dX
    add("broadcast:col", n * d(s.in) * e, d(q));  // W blocks for dX
    add("reduce_scatter:row", d(q) * b * k0 * e, 1);
  }
  add("allgather:row", d(q) * b * d(largest_part(model.classes, q)) * e, 1);  // the logits
  if (model.block == BlockKind::residual_mlp && model.layers > 0) {
    const double blocks = d(model.layers);
    // Each LayerNorm's row statistics: gathered in its forwards, summed in its backward.
    add("allgather:row", block_forwards * blocks * d(q) * 2 * b * e, block_forwards * blocks);
    if (training) {
      add("allreduce:row", blocks * 2 * b * e, blocks);
      vector_elements += blocks * 2 * d(part_size(model.hidden, q, at.column));
    }
  }
  // Biases, γ and β: summed down the column unit by unit.
  if (training) add("allreduce:col", vector_elements * e, unit_count(model));
  return v;
}

}  // namespace mlps
