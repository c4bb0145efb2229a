#include "src/plan/rank_work.h"

#include <cmath>

#include "src/memory/scheme_memory.h"
#include "src/schemes/data/data_parallel_volumes.h"
#include "src/schemes/data/gradient_bucketer.h"
#include "src/schemes/pipeline/pipeline_volumes.h"
#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/volumes_2d.h"
#include "src/schemes/tensor3d/volumes_3d.h"

namespace mlps {

namespace {

size_t wire_bytes(const Options& o) { return wire_element_bytes(o.precision); }
size_t grad_wire_bytes(const Options& o) {
  return wire_element_bytes(o.precision, o.fp32_grad_comm);
}

// The work of a rank that runs `share` of its replica's model on `rows` rows. Its element-wise
// kernels: on `own` activations where the scheme gives them (a tensor-parallel rank's, at the
// slice widths its memory counts: whole where it replicates them, as tensor1d's LayerNorm and
// residual without sequence parallelism), else `share` of the replica's.
RankWork replica_share(const Options& o, double rows, double share,
                       const ActivationSlice* own = nullptr, bool typed = false) {
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

std::vector<RankWork> data_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const int n = c.world;
  // Hybrid sharding (--shard-group G < N): groups of G consecutive ranks share one sharded copy
  // ("shard"), the N/G copies all-reduce ("data"; bare "allreduce" over all ranks when G = 1).
  const int g = c.data.shard_group > 0 ? c.data.shard_group : n;
  shape.axes = {{"data", n / g}, {"shard", g}};
  shape.axis_of_group = g == n ? std::map<std::string, std::string>{{"world", "shard"}}
                               : std::map<std::string, std::string>{
                                     {"world", "data"}, {"shard", "shard"}, {"data", "data"}};
  // bf16 and fp16: typed 16-bit storage, as bin/data trains.
  RankWork w = replica_share(o, max_rows(o.batch, n), 1.0, nullptr, true);
  const double params = static_cast<double>(parameter_count(o.model));
  w.gemm_parameters = params;  // ZeRO-3 gathers each unit whole before its GEMMs
  w.weights_gathered = c.data.zero == 3;
  w.optimized_parameters = c.data.zero >= 1 ? params / g : params;
  // DDP's optimizer zeroes the gradients it updates; a sharded one holds a shard only, so the
  // whole gradient is written with zeros once a step (ZeRO-1's buffer, ZeRO-2's buckets, ZeRO-3's
  // units).
  if (c.data.zero >= 1) w.elementwise.backward += params * element_bytes(o.precision);
  // Gradients on their wire (fp32 with --fp32-grad-comm); typed values are all-gathered as
  // their 2 bytes, whatever the gradients' wire.
  w.bytes = data_comm_bytes(o.model, c.data, n, element_bytes(o.precision), grad_wire_bytes(o),
                            false, &w.calls, w.typed_16bit ? 2 : 0);
  const GradientBucketer bucketer =
      ddp_buckets(parameter_tensor_sizes(o.model), c.data.bucket_mb, element_bytes(o.precision),
                  c.data.zero >= 1 ? n : 1);
  std::vector<double> bucket_shares;
  for (const GradientBucket& b : bucketer.buckets())
    bucket_shares.push_back(static_cast<double>(b.count) /
                            static_cast<double>(bucketer.total_elements()));
  if (c.data.zero != 3)
    for (const auto& [key, bytes] : w.bytes) w.call_shares[key] = bucket_shares;
  w.memory = data_memory(o, n, c.data);
  return {w};
}

std::vector<RankWork> pipeline_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const PipelineLayout& layout = *c.pipeline;
  shape.axes = layout.axes();
  shape.axis_of_group = {{"pipe", "pipe"}, {"data", "data"}};
  const double rows = max_rows(o.batch, layout.replicas);
  const double total = static_cast<double>(parameter_count(o.model));
  const std::vector<std::vector<LinearShape>> units = unit_linears(o.model);
  std::vector<RankWork> ranks;
  for (int s = 0; s < layout.stages; ++s) {
    const double held = static_cast<double>(pipeline_rank_parameters(o.model, layout, s));
    RankWork w = replica_share(o, rows, held / total, nullptr, true);  // typed, as bin/pipeline
    w.gemm_rows = rows / layout.micro_batches;
    w.gemm_linears.clear();
    const PipelineShape ps = layout.shape();
    for (int vs = 0; vs < ps.virtual_stages(); ++vs)
      if (ps.rank_of(vs) == s)
        for (int u = layout.partition.first_unit(vs); u < layout.partition.end_unit(vs); ++u)
          w.gemm_linears.insert(w.gemm_linears.end(), units[u].begin(), units[u].end());
    w.gemm_parameters = held;
    w.optimized_parameters = held;
    w.bytes = pipeline_comm_bytes(o.model, layout, o.batch, layout.rank_of(s, 0), wire_bytes(o),
                                  grad_wire_bytes(o), false, &w.calls);
    w.memory = pipeline_memory(o, layout, s);
    ranks.push_back(w);
  }
  return ranks;
}

std::vector<RankWork> tensor1d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Tensor1dPlan& plan = *c.tensor1d;
  shape.axes = {{"data", c.replicas}, {"tensor", plan.tp}};
  shape.axis_of_group = {{"tp", "tensor"}, {"data", "data"}};
  const double rows = max_rows(o.batch, c.replicas);
  const double local = static_cast<double>(local_parameter_count(plan));
  const ActivationSlice own = tensor1d_activations(o, plan, c.replicas);
  RankWork w =
      replica_share(o, rows, local / static_cast<double>(parameter_count(o.model)), &own,
                    true);  // typed, as bin/tensor1d
  w.gemm_parameters = local;
  w.optimized_parameters = local;
  w.gemm_linears.clear();  // column-parallel Linears split their outputs, row-parallel inputs
  for (const PlannedLinear& l : plan.linears)
    w.gemm_linears.push_back({l.shape.name,
                              l.split == LinearSplit::row ? l.shape.in / plan.tp : l.shape.in,
                              l.split == LinearSplit::column ? l.shape.out / plan.tp : l.shape.out});
  w.bytes = tensor1d_comm_bytes(plan, static_cast<int64_t>(rows), wire_bytes(o), c.replicas,
                                false, grad_wire_bytes(o), &w.calls);
  w.memory = tensor1d_memory(o, plan, c.replicas);
  return {w};
}

std::vector<RankWork> tensor2d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const int q = c.tensor2d.q;
  shape.axes = {{"data", c.replicas}, {"rows", q}, {"cols", q}};
  shape.axis_of_group = {{"row", "cols"}, {"col", "rows"}, {"data", "data"}};
  const ActivationSlice own = tensor2d_activations(o, c.tensor2d);
  RankWork w = replica_share(o, max_rows(o.batch, c.replicas), 1.0 / (q * q), &own,
                             true);  // typed, as bin/tensor2d
  w.gemm_rows = max_rows(o.batch, c.replicas * q);  // a grid row's share of the replica's rows
  w.loaded_rows = w.gemm_rows;
  w.optimized_parameters = static_cast<double>(parameter_count(o.model)) / (q * q);
  // A rank's GEMMs take a weight panel from each of the q steps: a grid row's worth, P/q.
  w.gemm_parameters = w.optimized_parameters * q;
  // Each step's GEMM: a panel of the largest blocks (rank (0, 0)'s).
  for (LinearShape& l : w.gemm_linears)
    l = {l.name, largest_part(l.in, q), largest_part(l.out, q)};
  w.bytes = tensor2d_volumes(o.model, o.batch, c.tensor2d, wire_bytes(o),
                             {}, false, &w.calls);
  w.memory = tensor2d_memory(o, c.tensor2d);
  return {w};
}

std::vector<RankWork> tensor3d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Shape3d& s = c.tensor3d;
  shape.axes = {{"data", s.dp}, {"depth", s.depth}, {"outer", s.outer}, {"inner", s.inner}};
  for (const char* axis : {"data", "depth", "outer", "inner"}) shape.axis_of_group[axis] = axis;
  const ActivationSlice own = tensor3d_activations(o, s);
  RankWork w = replica_share(o, max_rows(o.batch, s.dp), 1.0 / s.tensor_ranks(), &own,
                             true);  // typed, as bin/tensor3d
  w.gemm_rows = max_rows(o.batch, s.dp * s.depth);  // the depth axis splits the rows
  w.loaded_rows = w.gemm_rows;
  const Local3d local = tensor3d_local_elements(o.model, s);
  w.optimized_parameters = local.weights + local.vectors;
  // Weights are all-gathered over depth before the GEMMs: a rank computes with a depth's worth.
  w.gemm_parameters = w.optimized_parameters * s.depth;
  w.weights_gathered = s.depth > 1;
  // Each Linear's gathered block: inputs split over one axis, outputs (padded) over the other,
  // the axes alternating from the pixels' outer one (tensor3d_local_elements' walk).
  bool outer = true;
  for (LinearShape& l : w.gemm_linears) {
    const int in_group = outer ? s.outer : s.inner, out_group = outer ? s.inner : s.outer;
    l = {l.name, l.in / in_group, (l.out + out_group - 1) / out_group};
    outer = !outer;
  }
  w.bytes = tensor3d_volumes(
      tensor3d_layer_volumes(o.model, o.batch, s, wire_bytes(o), false, false), &w.calls);
  w.memory = tensor3d_memory(o, s, Overlap3d{});
  return {w};
}

}  // namespace

std::vector<RankWork> rank_work(const PlanCandidate& c, SchemeShape& shape) {
  if (c.scheme == "data") return data_work(c, shape);
  if (c.scheme == "pipeline") return pipeline_work(c, shape);
  if (c.scheme == "tensor1d") return tensor1d_work(c, shape);
  if (c.scheme == "tensor2d") return tensor2d_work(c, shape);
  if (c.scheme == "tensor3d") return tensor3d_work(c, shape);
  RankWork w = replica_share(c.options, static_cast<double>(c.options.batch), 1.0, nullptr,
                             true);  // serial: typed 16-bit storage, as bin/serial trains
  w.optimized_parameters = static_cast<double>(parameter_count(c.options.model));
  w.gemm_parameters = w.optimized_parameters;
  w.memory = serial_memory(c.options, false);
  shape.axes = {{"data", 1}};
  return {w};
}

}  // namespace mlps
