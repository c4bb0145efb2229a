#include "src/memory/memory_need.h"

#include "src/human_bytes.h"
#include "src/options.h"

namespace mlps {

std::string MemoryNeed::breakdown() const {
  return "parameters " + human_bytes(parameters) + ", gradients " + human_bytes(gradients) +
         ", optimizer " + human_bytes(optimizer) + ", activations " + human_bytes(activations) +
         ", buffers " + human_bytes(buffers);
}

size_t element_bytes(Precision precision) { return precision == Precision::fp64 ? 8 : 4; }

size_t wire_element_bytes(Precision precision, bool fp32_gradients) {
  const StorageFormat wire = storage_format(precision);
  if (fp32_gradients && wire != StorageFormat::full) return 4;
  return wire_bytes(wire, element_bytes(precision));
}

void add_parameter_state(MemoryNeed& need, double held, double optimized,
                         const OptimizerConfig& optimizer, Precision precision) {
  const double e = static_cast<double>(element_bytes(precision));
  const bool mixed = storage_format(precision) != StorageFormat::full;
  const double state_per_element =
      (optimizer.kind == OptimizerKind::adam ? 2.0 : 0.0) + (mixed ? 1.0 : 0.0);
  need.parameters += held * e;
  need.gradients += held * e;
  need.optimizer += optimized * state_per_element * e;
}

double replica_activation_bytes(const ModelConfig& model, int64_t rows,
                                const ActivationWidths& w, size_t element_bytes) {
  const auto r = static_cast<double>(rows);
  const auto layers = static_cast<double>(model.layers);
  const auto classes = static_cast<double>(model.classes);
  double elements = r * static_cast<double>(w.inputs)            // inputs
                    + (layers + 1) * r * static_cast<double>(w.hidden)  // block outputs
                    + 3 * r * classes + r                        // logits, probs, their gradient; loss
                    + 2 * r * static_cast<double>(w.hidden);     // ping-pong activation gradients
  if (model.block == BlockKind::residual_mlp) {
    // Saved per block: LayerNorm output, mean, rstd and ReLU output; one scratch: ∂normed, ∂inner.
    const double saved = r * static_cast<double>(w.hidden + w.ffn) + 2 * r;
    const double sets = model.checkpoint_activations ? (model.layers > 0 ? 1 : 0) : layers;
    elements += sets * saved + (model.layers > 0 ? r * static_cast<double>(w.hidden + w.ffn) : 0);
    // A sliced LayerNorm's own scratch, per block: its slice's moments, the gathered moments
    // (when sliced over more than one rank) and the backward's row sums.
    if (w.norm_ranks > 0)
      elements += layers * r * static_cast<double>(4 + (w.norm_ranks > 1 ? 2 * w.norm_ranks : 0));
  } else if (model.layers > 0) {
    elements += r * static_cast<double>(w.hidden);  // the blocks' shared backward scratch
  }
  if (w.logit_parts > 0)  // split logits: this rank's block, the gathered blocks, its gradient
    elements += (2 + w.logit_parts) * r * static_cast<double>(w.logit_block);
  return elements * static_cast<double>(element_bytes) + r * 4;  // + int32 labels
}

}  // namespace mlps
