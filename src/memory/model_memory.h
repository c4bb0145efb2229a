#pragma once
// The pieces every scheme's memory accounting is made of (src/schemes/<scheme>/<scheme>_memory.h):
// parameter state, FcNet's activations at a rank's rows and slice widths, typed storage's GEMM
// scratch, and what --verify adds. How close each scheme's estimate is: docs/memory.md.
#include <cstdint>
#include <vector>

#include "src/memory/memory_need.h"
#include "src/options/options.h"

namespace mlps {

inline double as_double(int64_t n) { return static_cast<double>(n); }

// Parameter values, gradients and optimizer state for `held` parameter elements of which
// `optimized` are updated on this rank (fewer under ZeRO).
void add_parameter_state(MemoryNeed& need, double held, double optimized,
                         const OptimizerConfig& optimizer, Precision precision,
                         bool typed = false);
// FcNet's activations and backward scratch for `rows` rows (see FcNet and MlpBlock): inputs
// and labels, L + 1 block outputs, per block the saved LayerNorm output, moments and ReLU
// output (one shared set with checkpoint_activations), the blocks' one backward scratch, the
// logits, probabilities and their gradient (and the split logits' blocks), and the two
// ping-pong activation gradients.
double replica_activation_bytes(const ModelConfig& model, int64_t rows,
                                const ActivationWidths& w, ElementSizes e);
// A typed 16-bit run's GEMM scratch at `rows` rows, over the rank's `linears` (default: the
// whole model's), as the backend's gemm_16bit_scratch says (the CPU widens its operands into
// it; the GPU needs none); none for fp32, fp64 or the emulation.
double typed_scratch_bytes(const Options& o, int64_t rows, bool typed,
                           const std::vector<LinearShape>* linears = nullptr);
// A rank that updates all `held` parameters it holds, with activations of `rows` at `widths`.
MemoryNeed rank_need(const Options& o, double held, int64_t rows, const ActivationWidths& widths,
                     bool typed = false);
// The whole model trained on one rank; `typed`: bf16 and fp16 in 16-bit buffers (bin/serial),
// else emulated (the --verify replay). fuse_update: as asked of SerialTrainer (its dW block
// where the fused update applies).
MemoryNeed whole_model_need(const Options& o, bool fuse_update, bool typed);
// What --verify adds on rank 0, in host memory whatever the run's device: the serial replay in
// fp64 (and, unless fp64, in the run's precision after it) on the CPU, and the fp64 copies of the
// parameters it compares (src/driver/verification.cpp), at the largest moment.
double verify_replay_bytes(const Options& o);

}  // namespace mlps
