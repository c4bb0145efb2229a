#include "src/schemes/tensor3d/tensor3d_memory.h"

#include <algorithm>
#include <vector>

#include "src/base/balanced_split.h"
#include "src/memory/model_memory.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/tensor3d_volumes.h"

namespace mlps {

ActivationSlice tensor3d_activations(const Options& o, const Tensor3dGrid& shape) {
  // The embed's output and the residual stream are sharded over the inner axis, the blocks'
  // F-wide activations over the outer one; plain blocks alternate (count the wider slice).
  const int narrow = std::min(shape.outer, shape.inner);
  const bool residual = o.model.block == BlockKind::residual_mlp;
  ActivationWidths w{largest_part(o.model.input_features(), shape.outer),
                     largest_part(o.model.hidden, residual ? shape.inner : narrow),
                     largest_part(o.model.ffn_hidden(), residual ? shape.outer : narrow)};
  w.norm_ranks = shape.inner;  // the residual stream's axis
  // The logits' blocks, all-gathered over the classifier's output axis.
  const int logit_ranks =
      classifier_input_axis(o.model) == ShardAxis::inner ? shape.outer : shape.inner;
  if (logit_ranks > 1) {
    w.logit_block = largest_part(o.model.classes, logit_ranks);
    w.logit_parts = logit_ranks;
  }
  return {largest_part(o.batch, shape.dp * shape.depth), w};
}

MemoryNeed tensor3d_memory(const Options& o, const Tensor3dGrid& shape, const Overlap3d& overlap) {
  const Local3d local = tensor3d_local_elements(o.model, shape);
  const ActivationSlice a = tensor3d_activations(o, shape);
  // bf16 and fp16: typed storage, as bin/tensor3d trains.
  MemoryNeed need = rank_need(o, local.weights + local.vectors, a.rows, a.widths, true);
  const ElementSizes e = element_sizes(o.precision, true);
  const int narrow = std::min(shape.outer, shape.inner), wide = std::max(shape.outer, shape.inner);
  std::vector<int64_t> blocks;
  std::vector<LinearShape> local_linears;
  for (const LinearShape& s : linear_shapes(o.model)) {
    local_linears.push_back({s.name, largest_part(s.in, wide), largest_part(s.out, narrow)});
    blocks.push_back(local_linears.back().out * local_linears.back().in);
  }
  // Gathered weight blocks (stored) and full dW blocks (kept) over depth; typed GEMM scratch.
  const ScratchElements scratch = depth_scratch_elements(blocks, shape.depth, overlap);
  need.buffers = as_double(scratch.gathered) * e.stored + as_double(scratch.weight_grads) * e.kept +
                 typed_scratch_bytes(o, a.rows, true, &local_linears);
  return need;
}

}  // namespace mlps
