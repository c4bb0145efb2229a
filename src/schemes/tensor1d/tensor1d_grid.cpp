#include "src/schemes/tensor1d/tensor1d_grid.h"

#include "src/base/errors.h"
#include "src/schemes/trainer.h"

namespace mlps {

const PlannedLinear* Tensor1dGrid::linear_of(const std::string& parameter_name) const {
  const auto dot = parameter_name.rfind('.');
  const std::string layer = parameter_name.substr(0, dot);
  for (const auto& l : linears)
    if (l.shape.name == layer) return &l;
  return nullptr;
}

Tensor1dGrid make_tensor1d_grid(const ModelConfig& model, int tp, bool sequence_parallel) {
  if (tp < 1) throw InputError("--tp " + std::to_string(tp) + " must be at least 1");
  const std::string t = "--tp " + std::to_string(tp);
  if (model.block == BlockKind::residual_mlp && model.ffn_hidden() % tp != 0)
    throw InputError(t + " does not divide the FFN width " + std::to_string(model.ffn_hidden()) +
                     " (" + ffn_option(model) + ")");
  if (model.block == BlockKind::plain && model.hidden % tp != 0)
    throw InputError(t + " does not divide the hidden width " + std::to_string(model.hidden) +
                     " that --block plain splits");
  const bool split = tp > 1;
  if (sequence_parallel && split && model.block == BlockKind::plain)
    throw InputError("--sequence-parallel needs residual blocks (--block plain has no LayerNorm "
                     "or residual to split by rows)");
  if (sequence_parallel && split && model.hidden % tp != 0)
    throw InputError("--sequence-parallel: " + t + " does not divide the hidden width " +
                     std::to_string(model.hidden) + " (each rank holds 1/T of the rows of every "
                     "H-wide activation)");

  Tensor1dGrid plan;
  plan.model = model;
  plan.tp = tp;
  plan.sequence_parallel = sequence_parallel && split;
  for (const LinearShape& shape : linear_shapes(model)) plan.linears.push_back({shape});
  const size_t classifier = plan.linears.size() - 1;
  if (split && model.input_features() % tp == 0) plan.linears[0].split = LinearSplit::row;
  if (split && model.classes % tp == 0) plan.linears[classifier].split = LinearSplit::column;
  // Column then row: a residual block's fc1, fc2; plain blocks in pairs (block 2k, block 2k+1),
  // an odd last block having no partner stays replicated.
  for (size_t i = 1; split && i + 1 < classifier; i += 2) {
    plan.linears[i].split = LinearSplit::column;
    plan.linears[i + 1].split = LinearSplit::row;
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

int64_t local_parameter_count(const Tensor1dGrid& plan) {
  int64_t count = 0;
  for (const auto& l : plan.linears) count += local_elements(l, plan.tp);
  if (plan.model.block == BlockKind::residual_mlp)
    count += plan.model.layers * 2 * plan.model.hidden;  // LayerNorm γ, β (replicated)
  return count;
}

void check_sequence_parallel_rows(const Tensor1dGrid& plan, int64_t global_batch, int dp) {
  if (!plan.sequence_parallel) return;
  for (int replica = 0; replica < dp; ++replica) {
    const int64_t rows = even_batch_slice(global_batch, replica, dp).count;
    if (rows % plan.tp == 0) continue;
    throw InputError("--sequence-parallel: --batch " + std::to_string(global_batch) +
                     (dp > 1 ? " gives replica " + std::to_string(replica) + " " : " gives ") +
                     std::to_string(rows) + " rows, which --tp " + std::to_string(plan.tp) +
                     " does not divide");
  }
}

int64_t pass_rows(const Tensor1dGrid& plan, int64_t rows) {
  return plan.sequence_parallel ? (rows + plan.tp - 1) / plan.tp * plan.tp : rows;
}

namespace {

// Sequence parallelism's volumes: an all-gather of the rows before each column-parallel Linear
// and of the output gradient in each row-parallel one's backward, a reduce-scatter after each
// row-parallel Linear and of each column-parallel one's partial dX, and the all-reduce of the
// gradients of parameters applied to this rank's rows only.
std::map<std::string, double> sequence_parallel_bytes(const Tensor1dGrid& plan, int64_t rows,
                                                      double b, double grad_b, bool inference,
                                                      CommCalls* calls) {
  const ModelConfig& m = plan.model;
  const double activation = static_cast<double>(rows * m.hidden) * b;
  const bool recompute = m.checkpoint_activations && !inference;
  const double passes = inference ? 0 : 1;  // backward passes
  double gathers = 0, scatters = 0, gradients = 0;  // activations; gradient elements
  double gradient_tensors = 0;  // one all-reduce each
  for (size_t i = 0; i < plan.linears.size(); ++i) {
    const PlannedLinear& l = plan.linears[i];
    const bool embed = i == 0, classifier = i + 1 == plan.linears.size();
    if (embed && l.split == LinearSplit::replicated) {
      gradients += static_cast<double>(l.shape.in * l.shape.out + l.shape.out);
      gradient_tensors += 2;  // weight, bias
    }
    if (l.split == LinearSplit::row) {  // fc2 and a row-parallel embed
      scatters += 1 + (recompute && !embed ? 1 : 0);
      gathers += passes;
    }
    if (classifier || l.split == LinearSplit::column) {  // fc1 (its LayerNorm's gather)
      gathers += 1 + (recompute && !classifier ? 1 : 0);
      if (l.split == LinearSplit::column) scatters += passes;
    }
  }
  if (m.block == BlockKind::residual_mlp) {
    gradients += static_cast<double>(m.layers * 2 * m.hidden);
    gradient_tensors += 2.0 * m.layers;  // each LayerNorm's γ, β
  }
  std::map<std::string, double> bytes;
  add_volume(bytes, calls, "allgather:tp", gathers * activation, gathers);
  if (plan.classifier().split == LinearSplit::column)  // the logits
    add_volume(bytes, calls, "allgather:tp", static_cast<double>(rows * m.classes) * b, 1);
  add_volume(bytes, calls, "reduce_scatter:tp", scatters * activation, scatters);
  if (!inference && gradients > 0)
    add_volume(bytes, calls, "allreduce:tp", gradients * grad_b, gradient_tensors);
  return bytes;
}

}  // namespace

std::map<std::string, double> tensor1d_comm_bytes(const Tensor1dGrid& plan, int64_t rows,
                                                  size_t element_bytes, int dp, bool inference,
                                                  size_t grad_element_bytes, CommCalls* calls) {
  const double b = static_cast<double>(element_bytes);
  std::map<std::string, double> bytes;
  if (plan.sequence_parallel)
    bytes = sequence_parallel_bytes(plan, rows, b,
                                    static_cast<double>(grad_element_bytes ? grad_element_bytes
                                                                           : element_bytes),
                                    inference, calls);
  const double activation = static_cast<double>(rows * plan.model.hidden) * b;
  const bool recompute = plan.model.checkpoint_activations && !inference;
  const size_t classifier = plan.linears.size() - 1;
  double all_reduces = 0;  // of one [rows × H] activation each
  for (size_t i = 0; i < plan.linears.size() && !plan.sequence_parallel; ++i) {
    const PlannedLinear& l = plan.linears[i];
    if (l.split == LinearSplit::row) {
      all_reduces += 1;  // forward: the partial outputs
      if (recompute && i != 0) all_reduces += 1;  // a block's: again in its recompute
    }
    if (l.split == LinearSplit::column && i != 0 && !inference) all_reduces += 1;  // backward: dX
    if (l.split == LinearSplit::column && i == classifier)
      add_volume(bytes, calls, "allgather:tp", static_cast<double>(rows * plan.model.classes) * b,
                 1);
  }
  if (all_reduces > 0)
    add_volume(bytes, calls, "allreduce:tp", all_reduces * activation, all_reduces);
  if (dp > 1 && !inference)  // one per unit, as backward finishes it
    add_volume(bytes, calls, "allreduce:data", static_cast<double>(local_parameter_count(plan)) * b,
               unit_count(plan.model));
  return bytes;
}

}  // namespace mlps
