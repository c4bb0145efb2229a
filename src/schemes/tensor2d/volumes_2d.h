#pragma once
// The communication of one bin/tensor2d training step, per rank, from the configuration alone
// (nccl-tests sizes, as CommLog records them), keyed as the result file's /comm groups. With
// b = B/(dp·q) rows per rank, e bytes per element and, for each Linear(K → N), k = K/q and
// n = ⌈N/q⌉:
//   broadcast:row       Σ_linears 2·q·b·k·e         X blocks, forward and for dW
//   broadcast:col       Σ_linears (2, embed 1)·q·n·k·e   W blocks, forward and for dX
//   reduce_scatter:row  Σ_linears but embed q·b·k·e     dX partials
//   reduce_scatter:col  Σ_linears q·n·k·e               dW partials
//   allgather:row       L_mlp·q·2b·e + q·b·⌈10/q⌉·e     LayerNorm moments, logit blocks
//   allreduce:row       L_mlp·2b·e                      LayerNorm backward row sums
//   allreduce:col       (Σ_linears n + L_mlp·2·H/q)·e   bias, γ, β slices down the column
//   allreduce:data      (dp > 1) every local parameter element·e
// (L_mlp: the residual_mlp blocks, 0 for --block plain.) Every rank moves the same bytes. At
// q = 1 only allreduce:data remains: a group of one rank communicates nothing.
#include <cstddef>
#include <map>
#include <string>

#include "src/model_config.h"
#include "src/schemes/tensor2d/grid_2d.h"

namespace mlps {

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const GridShape& shape, size_t element_bytes);

}  // namespace mlps
