#pragma once
// How bin/tensor1d splits FC_Net's Linear layers over T tensor-parallel ranks (Megatron-LM),
// decided from the options alone so every rank reaches the same plan (or the same InputError)
// before any work. Rank t of T holds:
//   column  output features [t·out/T, (t+1)·out/T): those weight rows and that bias slice; its
//           input is the full activation (an identity whose backward all-reduces dX);
//   row     input features [t·in/T, (t+1)·in/T): those weight columns; the output is a partial
//           sum all-reduced in forward, then the replicated bias is added once;
//   replicated  the whole layer.
// Residual blocks: fc1 column, fc2 row (F = ffn_mult·H must divide by T). Plain blocks pair up
// Megatron-style: block 2k column, block 2k+1 row, an odd last block replicated (H must divide
// by T). The embed is row-parallel over its S² input features when T divides S², the classifier
// column-parallel over the classes when T divides them; otherwise each is replicated. T = 1
// replicates everything (no tensor-parallel communication at all).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/model_config.h"

namespace mlps {

enum class LinearSplit { replicated, column, row };
const char* to_string(LinearSplit split);

struct PlannedLinear {
  LinearShape shape;  // global: name, in, out
  LinearSplit split = LinearSplit::replicated;
};

struct Tensor1dPlan {
  ModelConfig model;
  int tp = 1;
  std::vector<PlannedLinear> linears;  // linear_shapes() order: embed, blocks, classifier

  const PlannedLinear& embed() const { return linears.front(); }
  const PlannedLinear& classifier() const { return linears.back(); }
  // The Linear a parameter belongs to ("block0.fc1.weight" → block0.fc1), or null for
  // LayerNorm γ/β, which are always replicated.
  const PlannedLinear* linear_of(const std::string& parameter_name) const;
};

// Throws InputError naming the dimension T does not divide ("--tp 3 does not divide the FFN
// width 8192").
Tensor1dPlan make_tensor1d_plan(const ModelConfig& model, int tp);

// Elements of the parameters one tensor-parallel rank holds.
int64_t local_parameter_count(const Tensor1dPlan& plan);

// Bytes each collective kind moves per training iteration on a rank whose data replica trains
// on `rows` rows (nccl-tests sizes: an all-reduce counts its buffer, an all-gather its gathered
// output), keyed as the results store them ("allreduce:tp", "allgather:tp", "allreduce:data").
// With K = residual blocks, or plain column/row pairs:
//   allreduce:tp   = rows·H·b·([embed row] + 2·K + [classifier column])
//                    (forward fc2/row outputs, backward fc1/column dX);
//                    with checkpoint_activations rows·H·b·([embed row] + 3·K + [classifier
//                    column]): each block's recompute repeats its forward all-reduce
//   allgather:tp   = rows·C·b·[classifier column] (the logits)
//   allreduce:data = local_parameter_count·b when dp > 1 (every local gradient once)
// inference (a forward pass alone): allreduce:tp = rows·H·b·([embed row] + K), allgather:tp as
// above, no allreduce:data.
std::map<std::string, double> tensor1d_comm_bytes(const Tensor1dPlan& plan, int64_t rows,
                                                  size_t element_bytes, int dp,
                                                  bool inference = false);

}  // namespace mlps
