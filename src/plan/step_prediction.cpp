#include "src/plan/step_prediction.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_traffic.h"
#include "src/grid/process_grid.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/data_parallel_volumes.h"
#include "src/schemes/gradient_bucketer.h"
#include "src/schemes/pipeline_volumes.h"
#include "src/schemes/tensor2d/volumes_2d.h"
#include "src/schemes/tensor3d/volumes_3d.h"

namespace mlps {

namespace {

// What one rank does in a step, as its scheme accounts it.
struct RankWork {
  double gemm_flops = 0;         // forward, backward and any recompute
  double recompute_flops = 0;    // of which checkpointing's second forward
  double gemm_rows = 1;          // the rows its GEMMs run on (their rate depends on it)
  double loaded_rows = 1;        // the samples its data loader makes (its trainer's batch_slice)
  double gemm_parameters = 0;    // the weights its GEMMs read (gathered ones included)
  bool weights_gathered = false;  // gathered right before its GEMMs, which then read them in cache
  StepElementwiseBytes elementwise;
  double optimized_parameters = 0;
  std::map<std::string, double> bytes;  // the scheme's analytic volumes
  std::map<std::string, double> calls;  // collectives per key (latency terms)
  MemoryNeed memory;
  int stage = 0;  // pipeline: the rank's stage
};

// How a scheme's groups map onto its grid, and what it overlaps.
struct SchemeShape {
  std::vector<GridAxis> axes;
  std::map<std::string, std::string> axis_of_group;  // "tp" → "tensor"; "world" for bare kinds
};

double wire_bytes(const Options& o) {
  return static_cast<double>(wire_element_bytes(o.precision));
}
double grad_wire_bytes(const Options& o) {
  return static_cast<double>(wire_element_bytes(o.precision, o.fp32_grad_comm));
}

std::string group_of(const std::string& key) {
  const size_t colon = key.find(':');
  return colon == std::string::npos ? "world" : key.substr(colon + 1);
}

// Where the groups along `axis` sit when ranks fill nodes in order: whether some group holds
// ranks on two nodes, and then the fewest of its ranks on one node (each with its own NIC, so a
// ring across nodes crosses them in parallel, as nccl-tests' inter-node busbw shows).
struct GroupPlacement {
  bool inter_node = false;
  int ranks_per_node = 1;
};
GroupPlacement place_group(const std::vector<GridAxis>& axes, const std::string& axis,
                           int ranks_per_node) {
  int world = 1, index = 0;
  for (size_t a = 0; a < axes.size(); ++a) {
    world *= axes[a].size;
    if (axes[a].name == axis) index = static_cast<int>(a);
  }
  GroupPlacement placement{false, axes[index].size};
  for (int rank = 0; rank < world; ++rank) {
    std::vector<int> c = grid_coordinates(axes, rank);
    if (c[index] != 0) continue;  // visit each group once, from its first rank
    std::map<int, int> per_node;
    for (int k = 0; k < axes[index].size; ++k) {
      c[index] = k;
      ++per_node[grid_rank(axes, c) / ranks_per_node];
    }
    if (per_node.size() < 2) continue;
    placement.inter_node = true;
    for (const auto& [node, count] : per_node)
      placement.ranks_per_node = std::min(placement.ranks_per_node, count);
  }
  return placement;
}

// The work of a rank that runs `share` of its replica's model on `rows` rows.
RankWork replica_share(const Options& o, double rows, double share) {
  RankWork w;
  ModelConfig plain = o.model;
  plain.checkpoint_activations = false;
  const double all = model_flops_per_sample(o.model, false) * rows * share;
  w.gemm_flops = all;
  w.gemm_rows = rows;
  w.loaded_rows = rows;
  w.recompute_flops = all - model_flops_per_sample(plain, false) * rows * share;
  const StepElementwiseBytes e = training_step_elementwise_bytes(
      o.model, static_cast<int64_t>(std::ceil(rows)),
      static_cast<double>(element_bytes(o.precision)));
  w.elementwise = {e.forward * share, e.backward * share};
  return w;
}

// A tensor-parallel rank's element-wise kernels act on its own activations: at their slice
// widths (those its memory counts), whole where the scheme replicates them (tensor1d's
// LayerNorm and residual without sequence parallelism), not at its share of the parameters.
void price_elementwise_on(RankWork& w, const Options& o, const ActivationSlice& slice) {
  const StepElementwiseBytes e = training_step_elementwise_bytes(
      o.model, slice, static_cast<double>(element_bytes(o.precision)));
  w.elementwise = {e.forward, e.backward};
}

double max_rows(int64_t batch, int parts) { return std::ceil(static_cast<double>(batch) / parts); }

int linear_count(const ModelConfig& m) { return static_cast<int>(linear_shapes(m).size()); }

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
  RankWork w = replica_share(o, max_rows(o.batch, n), 1.0);
  const double params = static_cast<double>(parameter_count(o.model));
  w.gemm_parameters = params;  // ZeRO-3 gathers each unit whole before its GEMMs
  w.weights_gathered = c.data.zero == 3;
  w.optimized_parameters = c.data.zero >= 1 ? params / g : params;
  // DDP's optimizer zeroes the gradients it updates; a sharded one holds a shard only, so the
  // whole gradient is written with zeros once a step (ZeRO-1's buffer, ZeRO-2's buckets, ZeRO-3's
  // units).
  if (c.data.zero >= 1) w.elementwise.backward += params * element_bytes(o.precision);
  w.bytes = data_comm_bytes(o.model, c.data, n, element_bytes(o.precision),
                            static_cast<size_t>(wire_bytes(o)));
  const double buckets = static_cast<double>(
      ddp_buckets(parameter_tensor_sizes(o.model), c.data.bucket_mb, element_bytes(o.precision),
                  c.data.zero >= 1 ? n : 1)
          .buckets()
          .size());
  const double units = o.model.layers + 2.0;
  for (const auto& [key, bytes] : w.bytes)
    w.calls[key] = c.data.zero == 3 ? (key.starts_with("allgather") ? 2 * units : units)
                                    : buckets;
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
  const double message = rows / layout.micro_batches * o.model.hidden * wire_bytes(o);
  std::vector<RankWork> ranks;
  for (int s = 0; s < layout.stages; ++s) {
    const double held = static_cast<double>(pipeline_rank_parameters(o.model, layout, s));
    RankWork w = replica_share(o, rows, held / total);
    w.gemm_rows = rows / layout.micro_batches;
    w.gemm_parameters = held;
    w.stage = s;
    w.optimized_parameters = held;
    w.bytes = pipeline_comm_bytes(o.model, layout, o.batch, layout.rank_of(s, 0),
                                  static_cast<size_t>(wire_bytes(o)),
                                  static_cast<size_t>(grad_wire_bytes(o)));
    for (const auto& [key, bytes] : w.bytes)
      w.calls[key] = key == "sendrecv:pipe" ? bytes / message : 1;
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
  RankWork w = replica_share(o, rows, local / static_cast<double>(parameter_count(o.model)));
  w.gemm_parameters = local;
  w.optimized_parameters = local;
  price_elementwise_on(w, o, tensor1d_activations(o, plan, c.replicas));
  w.bytes = tensor1d_comm_bytes(plan, static_cast<int64_t>(rows),
                                static_cast<size_t>(wire_bytes(o)), c.replicas, false,
                                static_cast<size_t>(grad_wire_bytes(o)));
  for (const auto& [key, bytes] : w.bytes)
    w.calls[key] = key == "allreduce:data" ? 1 : 2.0 * linear_count(o.model);
  w.memory = tensor1d_memory(o, plan, c.replicas);
  return {w};
}

std::vector<RankWork> tensor2d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const int q = c.tensor2d.q;
  shape.axes = {{"data", c.replicas}, {"rows", q}, {"cols", q}};
  shape.axis_of_group = {{"row", "cols"}, {"col", "rows"}, {"data", "data"}};
  RankWork w = replica_share(o, max_rows(o.batch, c.replicas), 1.0 / (q * q));
  w.gemm_rows = max_rows(o.batch, c.replicas * q);  // a grid row's share of the replica's rows
  w.loaded_rows = w.gemm_rows;
  price_elementwise_on(w, o, tensor2d_activations(o, c.tensor2d));
  w.optimized_parameters = static_cast<double>(parameter_count(o.model)) / (q * q);
  // A rank's GEMMs take a weight panel from each of the q steps: a grid row's worth, P/q.
  w.gemm_parameters = w.optimized_parameters * q;
  w.bytes = tensor2d_volumes(o.model, o.batch, c.tensor2d, static_cast<size_t>(wire_bytes(o)));
  // SUMMA broadcasts a panel per grid step of each of a Linear's three GEMMs.
  for (const auto& [key, bytes] : w.bytes)
    w.calls[key] = key == "allreduce:data"      ? 1
                   : key.starts_with("broadcast") ? 3.0 * q * linear_count(o.model)
                                                  : 2.0 * linear_count(o.model);
  w.memory = tensor2d_memory(o, c.tensor2d);
  return {w};
}

std::vector<RankWork> tensor3d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Shape3d& s = c.tensor3d;
  shape.axes = {{"data", s.dp}, {"depth", s.depth}, {"outer", s.outer}, {"inner", s.inner}};
  for (const char* axis : {"data", "depth", "outer", "inner"}) shape.axis_of_group[axis] = axis;
  RankWork w = replica_share(o, max_rows(o.batch, s.dp), 1.0 / s.tensor_ranks());
  w.gemm_rows = max_rows(o.batch, s.dp * s.depth);  // the depth axis splits the rows
  w.loaded_rows = w.gemm_rows;
  price_elementwise_on(w, o, tensor3d_activations(o, s));
  const Local3d local = tensor3d_local_elements(o.model, s);
  w.optimized_parameters = local.weights + local.vectors;
  // Weights are all-gathered over depth before the GEMMs: a rank computes with a depth's worth.
  w.gemm_parameters = w.optimized_parameters * s.depth;
  w.weights_gathered = s.depth > 1;
  for (const Volume3d& v : tensor3d_layer_volumes(o.model, o.batch, s,
                                                  static_cast<size_t>(wire_bytes(o)), false,
                                                  false)) {
    if (v.group_size <= 1) continue;
    w.bytes[v.kind] += v.bytes;
    w.calls[v.kind] += 1;
  }
  w.memory = tensor3d_memory(o, s, Overlap3d{});
  return {w};
}

std::vector<RankWork> rank_work(const PlanCandidate& c, SchemeShape& shape) {
  if (c.scheme == "data") return data_work(c, shape);
  if (c.scheme == "pipeline") return pipeline_work(c, shape);
  if (c.scheme == "tensor1d") return tensor1d_work(c, shape);
  if (c.scheme == "tensor2d") return tensor2d_work(c, shape);
  if (c.scheme == "tensor3d") return tensor3d_work(c, shape);
  RankWork w = replica_share(c.options, static_cast<double>(c.options.batch), 1.0);
  w.optimized_parameters = static_cast<double>(parameter_count(c.options.model));
  w.gemm_parameters = w.optimized_parameters;
  w.memory = serial_memory(c.options, false);
  shape.axes = {{"data", 1}};
  return {w};
}

int group_size(const SchemeShape& shape, const std::string& axis) {
  for (const GridAxis& a : shape.axes)
    if (a.name == axis) return a.size;
  return 1;
}

// What a rank waits for, when collectives progress during compute: DDP and ZeRO-1/2 reduce
// buckets during backward (ZeRO-1/2 then all-gather the updated shards after the optimizer,
// exposed); ZeRO-3 also gathers ahead during forward; the last bucket (or unit) reduced is always
// exposed. A pipeline's transfers overlap the other micro-batches' passes but for the fill and
// the drain, and the replicas' all-reduce follows the step. Tensor parallelism waits for each.
double exposed_communication(const PlanCandidate& c, const StepPrediction& p, double work,
                             double backward) {
  double exposed = 0;
  if (c.scheme == "data") {
    if (!c.data.overlap) return p.comm;  // --no-overlap: after the backward pass
    const double window = c.data.zero == 3 ? work : backward;
    double hidden = 0, last = 0;
    for (const auto& [key, comm] : p.collectives) {
      if (c.data.zero != 3 && key.starts_with("allgather")) {
        exposed += comm.seconds;
        continue;
      }
      hidden += comm.seconds;
      last = std::max(last, comm.seconds / comm.calls);
    }
    return hidden > 0 ? exposed + std::max(hidden - window, last) : exposed;
  }
  if (c.pipeline) {
    const int boundaries = c.pipeline->shape().virtual_stages() - 1;
    for (const auto& [key, comm] : p.collectives)
      exposed += key == "sendrecv:pipe" ? 2.0 * boundaries * comm.seconds / comm.calls
                                        : comm.seconds;
    return exposed;
  }
  return p.comm;
}

StepPrediction predict_rank(const PlanCandidate& c, const MachineDescription& m,
                            const SchemeShape& shape, const RankWork& w) {
  const Options& o = c.options;
  const int on_node = c.ranks_on_node > 0 ? c.ranks_on_node : std::min(c.world, m.ranks_per_node);
  const double rate =
      m.gemm_flops(o.precision, on_node, c.threads_per_rank) * m.gemm_efficiency(w.gemm_rows);
  const double bandwidth = m.bandwidth(on_node, c.threads_per_rank);
  const double element = static_cast<double>(element_bytes(o.precision));
  // A run with more ranks on its node than the machine's (time-sharing cores) is one node still.
  const int ranks_per_node = std::max(m.ranks_per_node, on_node);
  StepPrediction p;
  p.compute = w.gemm_flops / rate;
  // The GEMM rates are measured with their operands in cache; in a step each weight comes from
  // memory (the optimizer's pass evicts them): read by the forward GEMM, by the input-gradient
  // GEMM and again by checkpointing's recompute, and its gradient read and written by the
  // accumulating weight-gradient GEMM.
  const double forward_passes = w.recompute_flops > 0 ? 2 : 1;
  const double backward_passes = 3;
  const double weight_pass = w.gemm_parameters * element / bandwidth;
  // Weights gathered right before their GEMMs are read in cache: the gradient's passes remain.
  const double memory_passes = w.weights_gathered ? 2 : forward_passes + backward_passes;
  p.weights_from_memory = memory_passes * weight_pass;
  // A pipeline's later micro-batches read the stage's weights again, as far as the description
  // says they were evicted in between (weight_restream's four passes: forward, input gradient,
  // the weight gradient read and written; checkpointing's recompute a fifth), at the rate for
  // its micro-batch's rows.
  if (c.pipeline && m.weight_restream_bandwidth > 0)
    p.weights_from_memory += (c.pipeline->micro_batches - 1.0) *
                             (forward_passes + backward_passes) / 4 * w.gemm_parameters *
                             element / m.restream_bandwidth(on_node, c.threads_per_rank,
                                                            w.gemm_rows);
  p.elementwise = (w.elementwise.forward + w.elementwise.backward) / bandwidth;
  const double update = o.optimizer.kind == OptimizerKind::adam
                            ? traffic::adam_update(static_cast<int64_t>(w.optimized_parameters))
                            : traffic::sgd_update(static_cast<int64_t>(w.optimized_parameters));
  p.optimizer = update * element / m.update_bandwidth(on_node, c.threads_per_rank);
  for (const auto& [key, bytes] : w.bytes) {
    PredictedComm& comm = p.collectives[key];
    const std::string axis = shape.axis_of_group.at(group_of(key));
    comm.group_size = group_size(shape, axis);
    const GroupPlacement placement = place_group(shape.axes, axis, ranks_per_node);
    comm.inter_node = placement.inter_node;
    comm.bytes = bytes;
    comm.calls = std::max(1.0, w.calls.at(key));
    const CommKind kind = comm_kind_of(key);
    LinkModel link = m.intra_node;
    if (placement.inter_node) {  // a ring crosses on every NIC of its ranks; a message on one
      link = m.inter_node;
      if (kind != CommKind::send_recv)
        link.bus_bandwidth = std::min(m.intra_node.bus_bandwidth,
                                      link.bus_bandwidth * placement.ranks_per_node);
    }
    comm.seconds = comm.calls * link.seconds(kind, comm.group_size, bytes / comm.calls);
    p.comm += comm.seconds;
    if (kind == CommKind::reduce_scatter && m.reduce_scatter_copies_send_buffer)
      p.send_buffer_copies += 2 * bytes / bandwidth;  // the input read, the temporary written
  }
  const double work = p.work();
  // Forward: a third of the step's GEMM flops (without recompute), one of the weights' passes
  // over memory and the forward kernels. A zero-bubble schedule's W pass: another third of the
  // flops and two passes (the gradient read and written); B the rest.
  const double plain_gemm = (w.gemm_flops - w.recompute_flops) / rate;
  const double memory_pass = p.weights_from_memory / memory_passes;
  const double forward = plain_gemm / 3 + (w.weights_gathered ? 0 : memory_pass) +
                         w.elementwise.forward / bandwidth;
  const double backward = work - forward;
  if (c.pipeline) {
    const PipelineShape ps = c.pipeline->shape();
    const double passes = static_cast<double>(c.pipeline->micro_batches) * ps.chunks;
    PassTimes t;
    t.forward = forward / passes;
    t.weight = (plain_gemm / 3 + 2 * memory_pass) / passes;
    t.input = backward / passes - t.weight;
    p.bubble_fraction = ideal_bubble_fraction(ps, t);
    p.bubble = work * p.bubble_fraction / (1 - p.bubble_fraction);
  }
  p.exposed_comm = m.comm_overlaps_compute ? exposed_communication(c, p, work, backward) : p.comm;
  // A pipeline's bubble is a wait for a message: its core is free for the loader's thread then.
  p.data_loading = std::max(
      0.0, m.data_loading_seconds(w.loaded_rows, on_node, c.threads_per_rank) - p.bubble);
  p.step = work + p.bubble + p.optimizer + p.exposed_comm + p.data_loading;
  p.samples_per_second = static_cast<double>(o.batch) / p.step;
  p.memory = w.memory;
  p.memory_available = m.memory_per_rank(on_node);
  return p;
}

}  // namespace

StepPrediction predict_step(const PlanCandidate& candidate, const MachineDescription& machine) {
  SchemeShape shape;
  StepPrediction slowest;
  for (const RankWork& w : rank_work(candidate, shape)) {
    StepPrediction p = predict_rank(candidate, machine, shape, w);
    if (p.step > slowest.step) {
      const MemoryNeed most = slowest.memory.total() > p.memory.total() ? slowest.memory : p.memory;
      slowest = p;
      slowest.memory = most;
    } else if (p.memory.total() > slowest.memory.total()) {
      slowest.memory = p.memory;
    }
  }
  return slowest;
}

}  // namespace mlps
