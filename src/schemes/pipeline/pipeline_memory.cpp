#include "src/schemes/pipeline/pipeline_memory.h"

#include <algorithm>
#include <vector>

#include "src/base/balanced_split.h"
#include "src/memory/model_memory.h"
#include "src/schemes/pipeline/pipeline_schedule.h"

namespace mlps {

namespace {

// One virtual stage of a pipeline: its micro-batch slot, its deferred weight-gradient inputs
// (split backwards), and what it holds for every micro-batch (scratch), in bytes.
struct ChunkBytes {
  double slot = 0, deferred = 0, scratch = 0;
};

ChunkBytes pipeline_chunk_bytes(const Options& o, const PipelineGrid& layout, int vs) {
  const ModelConfig& m = o.model;
  const ElementSizes e = element_sizes(o.precision, true);  // bf16, fp16: typed storage
  const int first = layout.partition.first_unit(vs), end = layout.partition.end_unit(vs);
  const int virtual_stages = layout.stages * layout.chunks;
  const bool is_first = vs == 0, is_last = vs + 1 == virtual_stages;
  const auto r = as_double(largest_part(o.batch, layout.replicas) / layout.micro_batches);
  const auto h = as_double(m.hidden), f = as_double(m.ffn_hidden());
  const auto classes = as_double(m.classes);
  const bool residual = m.block == BlockKind::residual_mlp;
  const double blocks = as_double(layout.partition.blocks(vs));
  // A residual block saves its LayerNorm output and ReLU output (stored) and the LayerNorm's
  // mean and rstd (kept).
  const double block_saved = residual ? r * (h + f) : 0, block_moments = residual ? 2 * r : 0;
  // Checkpointing with blocks: one shared recompute set, and the last stage keeps no output of
  // its last block (it is recomputed, into one shared buffer, before the classifier's backward).
  const bool recomputes = m.checkpoint_activations && blocks > 0;
  const bool shared_output = recomputes && is_last;
  // One micro-batch's slot: its input, each unit's output, the blocks' saved activations, and
  // the probabilities (kept) and int32 labels (last stage) or the output's gradient (the
  // others).
  double slot = r * (is_first ? as_double(m.input_features()) : h) +
                (end - first - 1 - (shared_output ? 1 : 0)) * r * h + r * (is_last ? classes : h);
  double slot_kept = 0;
  if (!m.checkpoint_activations) {
    slot += blocks * block_saved;
    slot_kept += blocks * block_moments;
  }
  if (is_last) slot_kept += r * classes;
  else slot += r * h;
  ChunkBytes bytes;
  bytes.slot = slot * e.stored + slot_kept * e.kept + (is_last ? r * sizeof(int32_t) : 0);
  // Split backwards keep each Linear's output gradient until W, and with checkpointing the
  // inputs that live in the shared recompute set (fc1's, fc2's, the classifier's).
  if (splits_backward(layout.schedule)) {
    double deferred = (is_first ? r * h : 0) + (is_last ? r * classes : 0) +
                      blocks * (residual ? r * (f + h) : r * h);
    if (recomputes && residual) deferred += blocks * r * (h + f);
    if (shared_output) deferred += r * h;
    bytes.deferred = deferred * e.stored;
  }
  // Scratch: the activation gradients, the blocks' shared backward scratch, the gradients sent
  // back, the last stage's logit gradient and losses (kept), checkpointing's recompute set.
  double scratch = 2 * r * h + (blocks > 0 ? r * (residual ? h + f : h) : 0), scratch_kept = 0;
  const PipelineShape shape = layout.shape();
  if (!is_first && shape.rank_of(vs - 1) != shape.rank_of(vs)) scratch += 2 * r * h;
  if (is_last) {
    scratch += r * classes;
    scratch_kept += r * layout.micro_batches;
  }
  if (recomputes) {
    scratch += block_saved + (shared_output ? r * h : 0);
    scratch_kept += block_moments;
  }
  bytes.scratch = scratch * e.stored + scratch_kept * e.kept;
  return bytes;
}

}  // namespace

MemoryNeed pipeline_memory(const Options& o, const PipelineGrid& layout, int stage) {
  MemoryNeed need;
  const PipelineShape shape = layout.shape();
  const std::vector<int64_t> units = unit_parameter_counts(o.model);
  std::vector<ChunkBytes> chunks;
  double held = 0;
  for (int c = 0; c < layout.chunks; ++c) {
    const int vs = shape.virtual_stage(stage, c);
    for (int u = layout.partition.first_unit(vs); u < layout.partition.end_unit(vs); ++u)
      held += as_double(units[u]);
    chunks.push_back(pipeline_chunk_bytes(o, layout, vs));
    need.activations += chunks.back().scratch;
  }
  add_parameter_state(need, held, held, o.optimizer, o.precision, true);
  // Typed storage's GEMM scratch, for the largest GEMM of this rank's chunks.
  const std::vector<std::vector<LinearShape>> unit_shapes = unit_linears(o.model);
  std::vector<LinearShape> linears;
  for (int c = 0; c < layout.chunks; ++c) {
    const int vs = shape.virtual_stage(stage, c);
    for (int u = layout.partition.first_unit(vs); u < layout.partition.end_unit(vs); ++u)
      linears.insert(linears.end(), unit_shapes[u].begin(), unit_shapes[u].end());
  }
  need.buffers += typed_scratch_bytes(
      o, largest_part(o.batch, layout.replicas) / layout.micro_batches, true, &linears);
  // The flush's one value: the all-reduce over the ranks that ends a step.
  need.buffers += element_sizes(o.precision, true).kept;
  // The slots along the actions as PipelineTrainer holds them: set aside in action order while
  // fewer than the schedule's peak are held, released by the backward (or W) that ends them.
  // A released slot's activations and W's copies are kept for the next ones of their chunk, so
  // each chunk holds, from the first step on, as many as it held at once.
  const std::vector<PipelineAction> actions = stage_actions(shape, stage);
  const int budget = max_in_flight(shape, stage);
  std::vector<bool> taken(static_cast<size_t>(layout.chunks * layout.micro_batches), false);
  size_t cursor = 0;
  int live = 0;
  std::vector<int> slots(chunks.size(), 0), most_slots(chunks.size(), 0);
  std::vector<int> deferred(chunks.size(), 0), most_deferred(chunks.size(), 0);
  auto take = [&](const PipelineAction& a) {
    const size_t key = static_cast<size_t>(a.chunk) * layout.micro_batches + a.micro_batch;
    if (taken[key]) return;
    taken[key] = true;
    ++live;
    most_slots[a.chunk] = std::max(most_slots[a.chunk], ++slots[a.chunk]);
  };
  auto set_aside = [&] {
    for (; cursor < actions.size(); ++cursor) {
      const PipelineAction& a = actions[cursor];
      const size_t key = static_cast<size_t>(a.chunk) * layout.micro_batches + a.micro_batch;
      if (a.pass != PipelineAction::Pass::forward || taken[key]) continue;
      if (live >= budget) return;
      take(a);
    }
  };
  set_aside();
  for (const PipelineAction& a : actions) {
    if (a.pass == PipelineAction::Pass::forward) take(a);
    if (a.pass == PipelineAction::Pass::backward_input)
      most_deferred[a.chunk] = std::max(most_deferred[a.chunk], ++deferred[a.chunk]);
    if (a.pass == PipelineAction::Pass::backward_weight) --deferred[a.chunk];
    if (releases_activations(a)) {
      --slots[a.chunk];
      --live;
    }
    set_aside();
  }
  for (size_t c = 0; c < chunks.size(); ++c)
    need.activations += most_slots[c] * chunks[c].slot + most_deferred[c] * chunks[c].deferred;
  return need;
}

}  // namespace mlps
