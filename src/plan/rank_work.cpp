#include "src/plan/rank_work.h"

#include <cmath>

#include "src/plan/plan_candidates.h"

namespace mlps {

size_t value_wire_bytes(const Options& o) { return wire_element_bytes(o.precision); }
size_t gradient_wire_bytes(const Options& o) {
  return wire_element_bytes(o.precision, o.fp32_grad_comm);
}

RankWork replica_share(const Options& o, double rows, double share, const ActivationSlice* own,
                       bool typed) {
  RankWork w;
  ModelConfig plain = o.model;
  plain.checkpoint_activations = false;
  const double all = model_flops_per_sample(o.model, false) * rows * share;
  w.gemm_flops = all;
  w.gemm_rows = rows;
  w.gemm_linears = linear_shapes(o.model);
  w.loaded_rows = rows;
  w.recompute_flops = all - model_flops_per_sample(plain, false) * rows * share;
  w.typed_16bit = typed && storage_format(o.precision) != StorageFormat::full;
  const double element = element_sizes(o.precision, w.typed_16bit).stored;
  const ActivationSlice whole{static_cast<int64_t>(std::ceil(rows)), full_widths(o.model)};
  w.elementwise = training_step_elementwise_bytes(o.model, own ? *own : whole, element);
  if (!own) w.elementwise = {w.elementwise.forward * share, w.elementwise.backward * share};
  return w;
}

double max_rows(int64_t batch, int parts) { return std::ceil(static_cast<double>(batch) / parts); }

std::vector<RankWork> rank_work(const PlanCandidate& c, SchemeShape& shape) {
  if (!c.work) throw std::logic_error("candidate " + c.label() + " has no work accounting");
  return c.work(c, shape);
}

}  // namespace mlps
