#include "src/memory/scheme_memory.h"

#include <algorithm>
#include <vector>

#include "src/device.h"
#include "src/model/fused_weight_update.h"
#include "src/schemes/pipeline/pipeline_partition.h"
#include "src/schemes/pipeline/pipeline_schedule.h"
#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor3d/depth_scratch.h"
#include "src/schemes/tensor3d/volumes_3d.h"

namespace mlps {
namespace {

double as_double(int64_t n) { return static_cast<double>(n); }

// Parameter values, gradients and optimizer state for `held` parameter elements of which
// `optimized` are updated on this rank (fewer under ZeRO).
void add_parameter_state(MemoryNeed& need, double held, double optimized,
                         const OptimizerConfig& optimizer, Precision precision,
                         bool typed = false) {
  const ElementSizes e = element_sizes(precision, typed);
  const bool mixed = storage_format(precision) != StorageFormat::full;
  const double state_per_element =
      (optimizer.kind == OptimizerKind::adam ? 2.0 : 0.0) + (mixed ? 1.0 : 0.0);
  need.parameters += held * e.stored;
  need.gradients += held * e.kept;
  need.optimizer += optimized * state_per_element * e.kept;
  // fp16's loss scaling: the optimizer's device count of non-finite gradients.
  if (precision == Precision::fp16) need.optimizer += sizeof(uint64_t);
}

// FcNet's activations and backward scratch for `rows` rows (see FcNet and MlpBlock): inputs
// and labels, L + 1 block outputs, per block the saved LayerNorm output, moments and ReLU
// output (one shared set with checkpoint_activations), the blocks' one backward scratch, the
// logits, probabilities and their gradient (and the split logits' blocks), and the two
// ping-pong activation gradients.
double replica_activation_bytes(const ModelConfig& model, int64_t rows,
                                const ActivationWidths& w, ElementSizes e) {
  const auto r = static_cast<double>(rows);
  const auto layers = static_cast<double>(model.layers);
  const auto classes = static_cast<double>(model.classes);
  double elements = r * static_cast<double>(w.inputs)                   // inputs
                    + (layers + 1) * r * static_cast<double>(w.hidden)  // block outputs
                    + 2 * r * classes  // logits and their gradient
                    + 2 * r * static_cast<double>(w.hidden);  // ping-pong activation gradients
  double kept = r * classes + r;  // probabilities; loss
  if (model.block == BlockKind::residual_mlp) {
    // Saved per block: LayerNorm output, mean, rstd and ReLU output; one scratch: ∂normed, ∂inner.
    const double sets = model.checkpoint_activations ? (model.layers > 0 ? 1 : 0) : layers;
    elements += sets * r * static_cast<double>(w.hidden + w.ffn) +
                (model.layers > 0 ? r * static_cast<double>(w.hidden + w.ffn) : 0);
    kept += sets * 2 * r;
    // A sliced LayerNorm's own scratch, per block (kept: statistics): its slice's moments, the
    // gathered moments (when sliced over more than one rank) and the backward's row sums.
    if (w.norm_ranks > 0)
      kept += layers * r * static_cast<double>(4 + (w.norm_ranks > 1 ? 2 * w.norm_ranks : 0));
  } else if (model.layers > 0) {
    elements += r * static_cast<double>(w.hidden);  // the blocks' shared backward scratch
  }
  if (w.logit_parts > 0)  // split logits: this rank's block, the gathered blocks, its gradient
    elements += (2 + w.logit_parts) * r * static_cast<double>(w.logit_block);
  return elements * e.stored + kept * e.kept + r * 4;  // + int32 labels
}

// Typed storage's GEMM scratch (Device::gemm on 16-bit tensors): what the largest GEMM of
// `linears` at `rows` rows needs, as the backend's gemm_16bit_scratch says (the CPU widens its
// operands into it; the GPU needs none).
double typed_gemm_scratch_bytes(const std::vector<LinearShape>& linears, int64_t rows,
                                DeviceKind device) {
  const auto scratch = [&](int64_t mm, int64_t n, int64_t k, bool c16) {
    if (device == DeviceKind::cuda) {
#ifdef MLPSCALE_WITH_CUDA
      return cuda::gemm_16bit_scratch(mm, n, k, c16);
#else
      return int64_t{0};  // what cuda::gemm_16bit_scratch says, for a plan of a GPU machine
#endif
    }
    return cpu::gemm_16bit_scratch(mm, n, k, c16);
  };
  // Per Linear its forward and its dW (dx widens the same three matrices as the forward).
  int64_t most = 0;
  for (const LinearShape& s : linears)
    most = std::max({most, scratch(rows, s.out, s.in, true), scratch(s.out, s.in, rows, false)});
  return 4.0 * as_double(most);
}

// A typed 16-bit run's GEMM scratch at `rows` rows, over the rank's `linears` (default: the
// whole model's); none for fp32, fp64 or the emulation.
double typed_scratch_bytes(const Options& o, int64_t rows, bool typed,
                           const std::vector<LinearShape>* linears = nullptr) {
  if (!typed || storage_format(o.precision) == StorageFormat::full) return 0;
  // (A plan may count for a GPU this build cannot see.)
  return typed_gemm_scratch_bytes(linears ? *linears : linear_shapes(o.model), rows,
                                  o.device == "cuda" ? DeviceKind::cuda : resolve_device(o.device));
}

// A rank that updates all `held` parameters it holds, with activations of `rows` at `widths`.
MemoryNeed rank_need(const Options& o, double held, int64_t rows, const ActivationWidths& widths,
                     bool typed = false) {
  MemoryNeed need;
  add_parameter_state(need, held, held, o.optimizer, o.precision, typed);
  need.activations =
      replica_activation_bytes(o.model, rows, widths, element_sizes(o.precision, typed));
  return need;
}

// Serial training; `typed`: bf16 and fp16 in 16-bit buffers (bin/serial), else emulated (the
// --verify replay).
MemoryNeed serial_need(const Options& o, bool fuse_update, bool typed) {
  MemoryNeed need =
      rank_need(o, as_double(parameter_count(o.model)), o.batch, full_widths(o.model), typed);
  const auto bytes = static_cast<int64_t>(element_bytes(o.precision));
  if (fuse_update && fused_update_applies(resolve_device(o.device), storage_format(o.precision)))
    need.optimizer += as_double(fused_block_elements(o.model, bytes) * bytes);
  need.buffers += typed_scratch_bytes(o, o.batch, typed);
  return need;
}

}  // namespace

MemoryNeed serial_memory(const Options& o, bool fuse_update) {
  return serial_need(o, fuse_update, true);
}

double verify_replay_bytes(const Options& o) {
  Options replay = o;
  replay.device = "cpu";  // the replay runs on the host whatever the run's device
  Options exact = replay;
  exact.precision = Precision::fp64;
  // The replay in the run's precision emulates bf16 and fp16 (SerialTrainer<float>).
  const double fp64_model = serial_need(exact, false, false).total();
  const double run_model =
      o.precision == Precision::fp64 ? 0.0 : serial_need(replay, false, false).total();
  if (o.inference) return std::max(fp64_model, run_model);  // forward passes: no copies gathered
  // A gathered copy of every parameter in fp64 (NamedTensor): the scheme's, held throughout; the
  // fp64 replay's, gathered while its model lives and kept while the run's precision replays.
  const double copy = 8.0 * as_double(parameter_count(o.model));
  double peak = fp64_model + copy;
  if (o.precision != Precision::fp64) peak = std::max(peak, copy + run_model + copy);
  return copy + peak;
}

MemoryNeed data_memory(const Options& o, int ranks, const DataParallelConfig& config) {
  MemoryNeed need;
  const double p = as_double(parameter_count(o.model));
  const double shard = p / ranks;
  const int64_t rows = largest_part(o.batch, ranks);
  const ElementSizes sizes = element_sizes(o.precision, true);  // bf16, fp16: typed storage
  need.activations = replica_activation_bytes(o.model, rows, full_widths(o.model), sizes);
  need.buffers = typed_scratch_bytes(o, rows, true);
  if (config.zero == 3) {
    // The rank's 1/G shard of values and gradients, and per unit of the model the gathered
    // values and the gradients being reduce-scattered: the unit computing and its neighbour
    // (prefetch and the reduction still in flight with overlap). With G = 1 < N the shard is
    // the whole model, computed with in place: nothing more (one rank alone runs plain ZeRO-3).
    const int group = config.shard_group > 0 ? config.shard_group : ranks;
    add_parameter_state(need, p / group, p / group, o.optimizer, o.precision, true);
    if (group == 1 && ranks > 1) return need;
    // Each unit's gathered values and the gradients it reduce-scatters live in kept buffers of
    // the largest unit's size (padded to G): two of each with overlap (the unit computing and
    // its neighbour being gathered or reduced), one without (fully_sharded_trainer.h).
    int64_t largest = 0;
    for (int64_t count : unit_parameter_counts(o.model))
      largest = std::max(largest, (count + group - 1) / group * group);
    need.buffers += (config.overlap ? 2 : 1) * as_double(largest) * (sizes.stored + sizes.kept);
    return need;
  }
  // Flat values (and gradients, but for ZeRO 2) for the whole model; ZeRO 1 and 2 add this
  // rank's shard of values and gradients, which the optimizer updates.
  add_parameter_state(need, p, config.zero == 0 ? p : shard, o.optimizer, o.precision, true);
  if (config.zero >= 1) need.buffers += shard * (sizes.stored + sizes.kept);
  if (config.zero == 2 && config.overlap) {
    // Gradients live per bucket while reduce-scattered: the buckets the unit in backward writes
    // (its bytes and about a bucket at its ends) and one still in flight; all without overlap.
    const double bucket = config.bucket_mb * 1024 * 1024;
    const std::vector<int64_t> units = unit_parameter_counts(o.model);
    const double largest_unit = as_double(*std::max_element(units.begin(), units.end()));
    need.gradients = std::min(p * sizes.kept, largest_unit * sizes.kept + 2 * bucket);
  }
  return need;
}

namespace {

// One virtual stage of a pipeline: its micro-batch slot, its deferred weight-gradient inputs
// (split backwards), and what it holds for every micro-batch (scratch), in bytes.
struct ChunkBytes {
  double slot = 0, deferred = 0, scratch = 0;
};

ChunkBytes pipeline_chunk_bytes(const Options& o, const PipelineLayout& layout, int vs) {
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

MemoryNeed pipeline_memory(const Options& o, const PipelineLayout& layout, int stage) {
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

ActivationSlice tensor1d_activations(const Options& o, const Tensor1dPlan& plan, int dp) {
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

MemoryNeed tensor1d_memory(const Options& o, const Tensor1dPlan& plan, int dp) {
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

ActivationSlice tensor2d_activations(const Options& o, const GridShape& shape) {
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

MemoryNeed tensor2d_memory(const Options& o, const GridShape& shape) {
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

ActivationSlice tensor3d_activations(const Options& o, const Shape3d& shape) {
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

MemoryNeed tensor3d_memory(const Options& o, const Shape3d& shape, const Overlap3d& overlap) {
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
