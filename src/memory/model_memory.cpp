#include "src/memory/model_memory.h"

#include <algorithm>

#include "src/device/device.h"
#include "src/model/fused_weight_update.h"

namespace mlps {
namespace {

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

}  // namespace

void add_parameter_state(MemoryNeed& need, double held, double optimized,
                         const OptimizerConfig& optimizer, Precision precision, bool typed) {
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

double typed_scratch_bytes(const Options& o, int64_t rows, bool typed,
                           const std::vector<LinearShape>* linears) {
  if (!typed || storage_format(o.precision) == StorageFormat::full) return 0;
  // (A plan may count for a GPU this build cannot see.)
  return typed_gemm_scratch_bytes(linears ? *linears : linear_shapes(o.model), rows,
                                  o.device == "cuda" ? DeviceKind::cuda : resolve_device(o.device));
}

MemoryNeed rank_need(const Options& o, double held, int64_t rows, const ActivationWidths& widths,
                     bool typed) {
  MemoryNeed need;
  add_parameter_state(need, held, held, o.optimizer, o.precision, typed);
  need.activations =
      replica_activation_bytes(o.model, rows, widths, element_sizes(o.precision, typed));
  return need;
}

MemoryNeed whole_model_need(const Options& o, bool fuse_update, bool typed) {
  MemoryNeed need =
      rank_need(o, as_double(parameter_count(o.model)), o.batch, full_widths(o.model), typed);
  const auto bytes = static_cast<int64_t>(element_bytes(o.precision));
  if (fuse_update && fused_update_applies(resolve_device(o.device), storage_format(o.precision)))
    need.optimizer += as_double(fused_block_elements(o.model, bytes) * bytes);
  need.buffers += typed_scratch_bytes(o, o.batch, typed);
  return need;
}

double verify_replay_bytes(const Options& o) {
  Options replay = o;
  replay.device = "cpu";  // the replay runs on the host whatever the run's device
  Options exact = replay;
  exact.precision = Precision::fp64;
  // The replay in the run's precision emulates bf16 and fp16 (SerialTrainer<float>).
  const double fp64_model = whole_model_need(exact, false, false).total();
  const double run_model =
      o.precision == Precision::fp64 ? 0.0 : whole_model_need(replay, false, false).total();
  if (o.inference) return std::max(fp64_model, run_model);  // forward passes: no copies gathered
  // A gathered copy of every parameter in fp64 (NamedTensor): the scheme's, held throughout; the
  // fp64 replay's, gathered while its model lives and kept while the run's precision replays.
  const double copy = 8.0 * as_double(parameter_count(o.model));
  double peak = fp64_model + copy;
  if (o.precision != Precision::fp64) peak = std::max(peak, copy + run_model + copy);
  return copy + peak;
}

}  // namespace mlps
