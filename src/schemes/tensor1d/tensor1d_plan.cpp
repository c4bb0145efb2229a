#include "src/schemes/tensor1d/tensor1d_plan.h"

#include "src/errors.h"

namespace mlps {

const PlannedLinear* Tensor1dPlan::linear_of(const std::string& parameter_name) const {
  const auto dot = parameter_name.rfind('.');
  const std::string layer = parameter_name.substr(0, dot);
  for (const auto& l : linears)
    if (l.shape.name == layer) return &l;
  return nullptr;
}

Tensor1dPlan make_tensor1d_plan(const ModelConfig& model, int tp) {
  if (tp < 1) throw InputError("--tp " + std::to_string(tp) + " must be at least 1");
  const std::string t = "--tp " + std::to_string(tp);
  if (model.block == BlockKind::residual_mlp && model.ffn_hidden() % tp != 0)
    throw InputError(t + " does not divide the FFN width " + std::to_string(model.ffn_hidden()) +
                     " (--ffn-mult " + std::to_string(model.ffn_mult) + " x --hidden " +
                     std::to_string(model.hidden) + ")");
  if (model.block == BlockKind::plain && model.hidden % tp != 0)
    throw InputError(t + " does not divide the hidden width " + std::to_string(model.hidden) +
                     " that --block plain splits");

  Tensor1dPlan plan;
  plan.model = model;
  plan.tp = tp;
  const bool split = tp > 1;
  for (const LinearShape& shape : linear_shapes(model)) plan.linears.push_back({shape});
  const size_t classifier = plan.linears.size() - 1;
  if (split && model.input_features() % tp == 0) plan.linears[0].split = LinearSplit::row;
  if (split && model.classes % tp == 0) plan.linears[classifier].split = LinearSplit::column;
  if (split && model.block == BlockKind::residual_mlp) {
    for (size_t i = 1; i < classifier; i += 2) {
      plan.linears[i].split = LinearSplit::column;    // fc1
      plan.linears[i + 1].split = LinearSplit::row;   // fc2
    }
  }
  if (split && model.block == BlockKind::plain) {
    // Pairs (block 2k, block 2k+1); an odd last block has no partner and stays replicated.
    for (size_t i = 1; i + 1 < classifier; i += 2) {
      plan.linears[i].split = LinearSplit::column;
      plan.linears[i + 1].split = LinearSplit::row;
    }
  }
  return plan;
}

namespace {

int64_t local_elements(const PlannedLinear& l, int tp) {
  const int64_t weight = l.shape.in * l.shape.out;
  switch (l.split) {
    case LinearSplit::column: return weight / tp + l.shape.out / tp;
    case LinearSplit::row: return weight / tp + l.shape.out;
    case LinearSplit::replicated: break;
  }
  return weight + l.shape.out;
}

}  // namespace

int64_t local_parameter_count(const Tensor1dPlan& plan) {
  int64_t count = 0;
  for (const auto& l : plan.linears) count += local_elements(l, plan.tp);
  if (plan.model.block == BlockKind::residual_mlp)
    count += plan.model.layers * 2 * plan.model.hidden;  // LayerNorm γ, β (replicated)
  return count;
}

std::map<std::string, double> tensor1d_comm_bytes(const Tensor1dPlan& plan, int64_t rows,
                                                  size_t element_bytes, int dp, bool inference) {
  std::map<std::string, double> bytes;
  const double b = static_cast<double>(element_bytes);
  const double activation = static_cast<double>(rows * plan.model.hidden) * b;
  const bool recompute = plan.model.checkpoint_activations && !inference;
  const size_t classifier = plan.linears.size() - 1;
  double all_reduces = 0;  // of one [rows × H] activation each
  for (size_t i = 0; i < plan.linears.size(); ++i) {
    const PlannedLinear& l = plan.linears[i];
    if (l.split == LinearSplit::row) {
      all_reduces += 1;  // forward: the partial outputs
      if (recompute && i != 0) all_reduces += 1;  // a block's: again in its recompute
    }
    if (l.split == LinearSplit::column && i != 0 && !inference) all_reduces += 1;  // backward: dX
    if (l.split == LinearSplit::column && i == classifier)
      bytes["allgather:tp"] = static_cast<double>(rows * plan.model.classes) * b;
  }
  if (all_reduces > 0) bytes["allreduce:tp"] = all_reduces * activation;
  if (dp > 1 && !inference)
    bytes["allreduce:data"] = static_cast<double>(local_parameter_count(plan)) * b;
  return bytes;
}

}  // namespace mlps
