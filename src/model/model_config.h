#pragma once
// The shape of the tutorial's FC_Net: embed Linear(S² → H), L blocks, classifier Linear(H → 10).
#include <cstdint>
#include <string>
#include <vector>

namespace mlps {

enum class BlockKind {
  residual_mlp,  // x + Linear(F→H)(ReLU(Linear(H→F)(LayerNorm(x)))), F = ffn_hidden()
  plain,         // ReLU(Linear(H→H)(x))
};

struct ModelConfig {
  int64_t image_size = 64;
  int64_t hidden = 2048;
  int64_t layers = 4;
  int64_t ffn_mult = 4;
  int64_t ffn_width = 0;  // F when non-zero (Llama-2-7B's 11008 is no multiple of H)
  int64_t classes = 10;
  BlockKind block = BlockKind::residual_mlp;
  // Keep only each block's input in forward; recompute the block in backward (bit-identical).
  bool checkpoint_activations = false;

  int64_t input_features() const { return image_size * image_size; }
  int64_t ffn_hidden() const { return ffn_width > 0 ? ffn_width : ffn_mult * hidden; }
};

// The flag that sets F as a command line gives it: "--ffn-hidden 11008" or "--ffn-mult 4".
std::string ffn_flag(const ModelConfig& config);
// F's source, for messages: "--ffn-hidden 11008" or "--ffn-mult 4 x --hidden 2048".
std::string ffn_option(const ModelConfig& config);

// The widths a rank's activations have (full model: S², H, F; sharded schemes: their slices).
struct ActivationWidths {
  int64_t inputs = 0, hidden = 0, ffn = 0;
  int64_t logit_block = 0, logit_parts = 0;  // split logits (LogitSplit); 0: whole
  int64_t norm_ranks = 0;  // LayerNorm sliced over this many ranks (its scratch); 0: whole rows
};
inline ActivationWidths full_widths(const ModelConfig& m) {
  return {m.input_features(), m.hidden, m.ffn_hidden()};
}

// A rank's activations: the rows of its pass at those widths. Its memory (<scheme>_memory.h) and
// the planner's element-wise time both count from it.
struct ActivationSlice {
  int64_t rows = 0;
  ActivationWidths widths;
};

// One Linear layer of the model, in forward order (out × in weight, as PyTorch stores it).
struct LinearShape {
  std::string name;  // "embed", "block0.fc1", "block0.fc2", ..., "classifier"
  int64_t in = 0;
  int64_t out = 0;
};

// The most blocks --layers accepts: 2^16, far beyond any network trained (hundreds of layers),
// and small enough that the per-layer tables built before the memory check (shapes, units, a
// pipeline's partition) and int unit counts stay cheap and exact.
constexpr int64_t kMaxLayers = int64_t{1} << 16;

std::vector<LinearShape> linear_shapes(const ModelConfig& config);
// Each FcNet unit's Linears (unit_count entries: embed, each block, classifier).
std::vector<std::vector<LinearShape>> unit_linears(const ModelConfig& config);
// Parameter count of each FcNet unit in forward order (embed, each block, classifier): the
// cost a pipeline stage balances, proportional to the unit's flops per sample.
std::vector<int64_t> unit_parameter_counts(const ModelConfig& config);

// FcNet's units (embed, each block, classifier): the granularity of per-unit gradient
// synchronisation and of ZeRO-3's gathers.
inline int unit_count(const ModelConfig& config) { return config.layers + 2; }
int64_t parameter_count(const ModelConfig& config);
// Elements of each parameter tensor in FcNet's creation order: per Linear its weight then its
// bias, a residual block's LayerNorm γ and β before its fc1.
std::vector<int64_t> parameter_tensor_sizes(const ModelConfig& config);
// Throws InputError when the model or a batch of `batch` rows has a tensor (or a total) of
// more than 2^60 elements: no machine holds it, and int64 byte counts would overflow.
void check_sizes_countable(const ModelConfig& config, int64_t batch);
// Model flops per sample, as the summary's TFLOP/s counts them: training 6·parameters (forward
// 2, backward 4), plus 2·(block parameters) when checkpoint_activations reruns every block's
// forward; inference 2·parameters.
double model_flops_per_sample(const ModelConfig& config, bool inference);

// One GEMM of a training step: C[m×n] = op(A)·op(B) with k the inner dimension.
struct GemmShape {
  std::string name;  // e.g. "block0.fc1.forward", ".grad_input", ".grad_weight"
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  // C = A·B + beta·C. 1 for dW: most schemes add it into a gradient already zero (zeroed by
  // the last update, GradAfterUpdate, or a fresh zeroed buffer), which spares a zeroing pass.
  double beta = 0;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// Every GEMM of one training step at `batch` rows: forward Y = X·Wᵀ, backward dX = dY·W
// (skipped for the first layer, whose input needs no gradient) and dW = dYᵀ·X (added, beta 1).
std::vector<GemmShape> training_step_gemms(const ModelConfig& config, int64_t batch);

// Bytes the element-wise kernels of one training step read and write at `batch` rows, each input
// read once and each output written once (as bin/bench_kernels counts them): bias add and bias
// gradient per Linear; per block the ReLU, and the LayerNorm and residual of a residual block;
// the loss. Forward and backward apart, for the step-time floor. With a slice, on a rank's rows
// and widths: each Linear's bias at its output's width (split logits: a block), the ReLU at
// the inner width, LayerNorm and residual at H's, the loss over all the classes.
struct StepElementwiseBytes {
  double forward = 0;
  double backward = 0;
};
StepElementwiseBytes training_step_elementwise_bytes(const ModelConfig& config, int64_t batch,
                                                     double element_bytes);
StepElementwiseBytes training_step_elementwise_bytes(const ModelConfig& config,
                                                     const ActivationSlice& slice,
                                                     double element_bytes);

}  // namespace mlps
