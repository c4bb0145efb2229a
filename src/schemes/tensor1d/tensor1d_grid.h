#pragma once
// How bin/tensor1d splits FC_Net's Linear layers over T tensor-parallel ranks (Megatron-LM:
// column, row or replicated; docs/tensor1d.md), decided from the
// options alone so every rank reaches the same plan (or the same InputError) before any work.
// Residual blocks: fc1 column, fc2 row. Plain blocks pair up: block 2k column, 2k+1 row, an
// odd last block replicated. The embed is row-parallel when T divides S², the classifier
// column-parallel when T divides the classes; otherwise each is replicated.
// Sequence parallelism (Megatron-LM; docs/tensor1d.md): the activations between
// the Linears are split by rows over the T ranks; residual blocks only, T must divide H.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/comm/comm_volume_report.h"
#include "src/model/model_config.h"

namespace mlps {

enum class LinearSplit { replicated, column, row };

struct PlannedLinear {
  LinearShape shape;  // global: name, in, out
  LinearSplit split = LinearSplit::replicated;
};

struct Tensor1dGrid {
  ModelConfig model;
  int tp = 1;
  bool sequence_parallel = false;
  std::vector<PlannedLinear> linears;  // linear_shapes() order: embed, blocks, classifier

  const PlannedLinear& embed() const { return linears.front(); }
  const PlannedLinear& classifier() const { return linears.back(); }
  // The Linear a parameter belongs to ("block0.fc1.weight" → block0.fc1), or null for
  // LayerNorm γ/β, which are always replicated.
  const PlannedLinear* linear_of(const std::string& parameter_name) const;
};

// Throws InputError naming the dimension T does not divide ("--tp 3 does not divide the FFN
// width 8192").
Tensor1dGrid make_tensor1d_grid(const ModelConfig& model, int tp, bool sequence_parallel = false);

// Sequence parallelism needs each replica's rows to split evenly over the T ranks: InputError
// naming the batch otherwise (training and --inference batches; evaluation pads its last one).
void check_sequence_parallel_rows(const Tensor1dGrid& plan, int64_t global_batch, int dp);
// The rows a replica's pass of `rows` runs on: under sequence parallelism rounded up to a
// multiple of T (the padding of an evaluation's short last batch), else `rows`.
int64_t pass_rows(const Tensor1dGrid& plan, int64_t rows);

// Elements of the parameters one tensor-parallel rank holds.
int64_t local_parameter_count(const Tensor1dGrid& plan);

// Bytes each collective kind moves per training iteration (with `inference`, per forward pass)
// on a rank whose data replica trains on `rows` rows: nccl-tests sizes, keyed as the results
// store them ("allreduce:tp", "allgather:tp", "reduce_scatter:tp", "allreduce:data"); the
// formulas are docs/tensor1d.md's. With sequence parallelism "allreduce:tp" carries only the
// gradients of the parameters every tp rank holds but applies to its own rows (γ, β, a replicated
// embed), at
// grad_element_bytes each. `calls`: where given, each kind's calls per iteration are added.
std::map<std::string, double> tensor1d_comm_bytes(const Tensor1dGrid& plan, int64_t rows,
                                                  size_t element_bytes, int dp,
                                                  bool inference = false,
                                                  size_t grad_element_bytes = 0,
                                                  CommCalls* calls = nullptr);

}  // namespace mlps
