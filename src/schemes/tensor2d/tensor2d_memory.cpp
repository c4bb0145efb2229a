#include "src/schemes/tensor2d/tensor2d_memory.h"

#include <algorithm>
#include <vector>

#include "src/base/balanced_split.h"
#include "src/memory/model_memory.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

ActivationSlice tensor2d_activations(const Options& o, const Tensor2dGrid& shape) {
  const int q = shape.q;
  ActivationWidths w{largest_part(o.model.input_features(), q), largest_part(o.model.hidden, q),
                     largest_part(o.model.ffn_hidden(), q)};
  w.norm_ranks = q;
  if (q > 1) {  // the logits' column blocks, all-gathered over the grid row
    w.logit_block = largest_part(o.model.classes, q);
    w.logit_parts = q;
  }
  return {largest_part(o.batch, shape.dp * q), w};
}

MemoryNeed tensor2d_memory(const Options& o, const Tensor2dGrid& shape) {
  const int q = shape.q;
  // Weight blocks are 1/q² of each matrix, vectors 1/q (replicated down the grid column); rank
  // (0, 0) holds the largest parts of every uneven split.
  const double held = as_double(ShardLayout(o.model, q, 0, 0).total());
  const ActivationSlice a = tensor2d_activations(o, shape);
  // bf16 and fp16: typed storage, as bin/tensor2d trains.
  MemoryNeed need = rank_need(o, held, a.rows, a.widths, true);
  const ElementSizes e = element_sizes(o.precision, true);
  // Typed storage's GEMM scratch for the largest of this rank's blocks.
  std::vector<LinearShape> blocks;
  for (const LinearShape& s : linear_shapes(o.model))
    blocks.push_back({s.name, largest_part(s.in, q), largest_part(s.out, q)});
  need.buffers += typed_scratch_bytes(o, a.rows, true, &blocks);
  if (q > 1) {
    // SUMMA's workspace (SummaWorkspace): two activation and weight blocks, and q partial
    // products of each for the reduce-scatters (dW's kept), sized for the largest Linear.
    int64_t activation_block = 0, weight_block = 0;
    for (const LinearShape& s : blocks) {
      activation_block = std::max(activation_block, a.rows * s.in);
      weight_block = std::max(weight_block, s.out * s.in);
    }
    need.buffers += as_double((2 + q) * activation_block + 2 * weight_block) * e.stored +
                    as_double(q * weight_block) * e.kept;
  }
  return need;
}

}  // namespace mlps
