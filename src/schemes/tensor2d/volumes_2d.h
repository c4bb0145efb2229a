#pragma once
// The communication of one bin/tensor2d training step for the rank at (replica d, grid row i,
// grid column j), from the configuration alone (nccl-tests sizes, as CommLog records them),
// keyed as the result file's /comm groups. Every split follows balanced_split.h's rule. With
// b = part_size(B, dp·q, d·q + i) rows, e bytes per element and, for each Linear(K → N),
// n = part_size(N, q, j) and k₀ = ⌈K/q⌉ (the largest part, to which reduce-scatters pad):
//   broadcast:row       Σ_linears 2·b·K·e                  X blocks, forward and for dW
//   broadcast:col       Σ_linears (2, embed 1)·n·K·e        W blocks, forward and for dX
//   reduce_scatter:row  Σ_linears but embed q·b·k₀·e        dX partials
//   reduce_scatter:col  Σ_linears q·n·k₀·e                  dW partials
//   allgather:row       L_mlp·q·2b·e + q·b·⌈10/q⌉·e         LayerNorm moments, logit blocks
//   allreduce:row       L_mlp·2b·e                          LayerNorm backward row sums
//   allreduce:col       (Σ_linears n + L_mlp·2·h)·e         bias, γ, β parts down the column
//   allreduce:data      (dp > 1) every local parameter element·e
// (L_mlp: the residual_mlp blocks, 0 for --block plain; h = part_size(H, q, j).) The q
// broadcasts of a step loop add up to the whole K whatever the split. At q = 1 only
// allreduce:data remains: a group of one rank communicates nothing.
// model.checkpoint_activations reruns every block's forward before its backward, adding per
// step Σ_block linears b·K·e to broadcast:row and n·K·e to broadcast:col, and L_mlp·q·2b·e
// to allgather:row (the embed and the classifier are not rerun).
// e is the bytes an element takes on the wire (2 for bf16/fp16 payloads; the caller prices
// "data" at 4 with --fp32-grad-comm).
// inference: one evaluate() of a global batch of B rows, forward only: broadcast:row
// Σ_linears b·K·e, broadcast:col Σ_linears n·K·e and allgather:row as above; nothing else.
#include <cstddef>
#include <map>
#include <string>

#include "src/model_config.h"
#include "src/schemes/tensor2d/grid_2d.h"

namespace mlps {

struct GridPosition {
  int replica = 0, row = 0, column = 0;
};

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const GridShape& shape, size_t element_bytes,
                                               const GridPosition& at = {},
                                               bool inference = false);

}  // namespace mlps
