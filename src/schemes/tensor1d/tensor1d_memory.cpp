#include "src/schemes/tensor1d/tensor1d_memory.h"

#include <vector>

#include "src/base/balanced_split.h"
#include "src/memory/model_memory.h"

namespace mlps {

ActivationSlice tensor1d_activations(const Options& o, const Tensor1dGrid& plan, int dp) {
  const int64_t rows = largest_part(o.batch, dp);
  // Activations between the Linears are whole (H wide; a plain column block's output is
  // counted whole too), the inner ones F/T wide; a row-parallel embed reads S²/T features, a
  // column-parallel classifier's logits are all-gathered in T blocks of C/T.
  ActivationWidths w = full_widths(o.model);
  w.ffn = largest_part(w.ffn, plan.tp);
  if (plan.embed().split == LinearSplit::row) w.inputs /= plan.tp;
  if (plan.classifier().split == LinearSplit::column) {
    w.logit_block = o.model.classes / plan.tp;
    w.logit_parts = plan.tp;
  }
  if (!plan.sequence_parallel) return {rows, w};
  // Those between the Linears hold R/T rows (counted as H/T wide) of the rows padded to a
  // multiple of T.
  w.hidden = o.model.hidden / plan.tp;
  return {pass_rows(plan, rows), w};
}

MemoryNeed tensor1d_memory(const Options& o, const Tensor1dGrid& plan, int dp) {
  const ActivationSlice a = tensor1d_activations(o, plan, dp);
  // bf16 and fp16: typed storage, as bin/tensor1d trains.
  MemoryNeed need = rank_need(o, as_double(local_parameter_count(plan)), a.rows, a.widths, true);
  const double e = element_sizes(o.precision, true).stored;
  // Typed storage's GEMM scratch for the largest of this rank's Linear blocks.
  std::vector<LinearShape> local;
  for (const PlannedLinear& l : plan.linears) {
    LinearShape shape = l.shape;
    if (l.split == LinearSplit::column) shape.out /= plan.tp;
    if (l.split == LinearSplit::row) shape.in /= plan.tp;
    local.push_back(shape);
  }
  need.buffers += typed_scratch_bytes(o, a.rows, true, &local);
  if (plan.sequence_parallel) {
    // The LayerNorm outputs (saved for fc1) and their gradient scratch are all-gathered, whole;
    // and the layers share one scratch of the padded rows, H wide.
    const int64_t h = o.model.hidden, narrow = a.widths.hidden;
    const int64_t sets = o.model.checkpoint_activations ? (o.model.layers > 0 ? 1 : 0)
                                                        : o.model.layers;
    need.activations += static_cast<double>(((sets + 1) * (h - narrow) + h) * a.rows) * e;
  }
  return need;
}

}  // namespace mlps
