#include "src/plan/step_prediction.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_traffic.h"
#include "src/grid/process_grid.h"
#include "src/plan/rank_work.h"

namespace mlps {

namespace {

std::string group_of(const std::string& key) {
  const size_t colon = key.find(':');
  return colon == std::string::npos ? "world" : key.substr(colon + 1);
}

// Where the groups along `axis` sit: on the nodes `rank_nodes` gives each world rank (a run's
// real placement), else with ranks filling nodes in order. Whether some group holds ranks on two
// nodes, and then the fewest of its ranks on one node (each with its own NIC, so a ring across
// nodes crosses them in parallel, as nccl-tests' inter-node busbw shows).
struct GroupPlacement {
  bool inter_node = false;
  int size = 1;
  int ranks_per_node = 1;
};
GroupPlacement place_group(const std::vector<GridAxis>& axes, const std::string& axis,
                           int ranks_per_node, const std::vector<int>& rank_nodes) {
  int world = 1, index = 0;
  for (size_t a = 0; a < axes.size(); ++a) {
    world *= axes[a].size;
    if (axes[a].name == axis) index = static_cast<int>(a);
  }
  GroupPlacement placement{false, axes[index].size, axes[index].size};
  for (int rank = 0; rank < world; ++rank) {
    std::vector<int> c = grid_coordinates(axes, rank);
    if (c[index] != 0) continue;  // visit each group once, from its first rank
    std::map<int, int> per_node;
    for (int k = 0; k < axes[index].size; ++k) {
      c[index] = k;
      const int r = grid_rank(axes, c);
      ++per_node[rank_nodes.empty() ? r / ranks_per_node : rank_nodes.at(static_cast<size_t>(r))];
    }
    if (per_node.size() < 2) continue;
    placement.inter_node = true;
    for (const auto& [node, count] : per_node)
      placement.ranks_per_node = std::min(placement.ranks_per_node, count);
  }
  return placement;
}

// What a rank waits for when collectives progress during compute (docs/planning.md): what its
// scheme says hides (RankWork::hiding) hides behind its window but for its last call.
double exposed_communication(const CommHiding& hiding, const StepPrediction& p, double work,
                             double backward) {
  double exposed = 0, hidden = 0, last = 0;
  for (const auto& [key, comm] : p.collectives) {
    const auto partial = hiding.exposed_calls.find(key);
    if (partial != hiding.exposed_calls.end()) {
      exposed += partial->second * comm.seconds / comm.calls;
    } else if (hiding.window == CommHiding::Window::none ||
               (hiding.allgathers_exposed && key.starts_with("allgather"))) {
      exposed += comm.seconds;
    } else {
      hidden += comm.seconds;
      last = std::max(last, comm.seconds / comm.calls);
    }
  }
  const double window = hiding.window == CommHiding::Window::step ? work : backward;
  return hidden > 0 ? exposed + std::max(hidden - window, last) : exposed;
}

// A rank's GEMM time per pass on tensor cores: its counted flops (RankWork::gemm_flops) at the
// seconds per flop that the roofline gives the shapes it multiplies (gemm_linears at gemm_rows),
// so that GEMMs all bound by their flops take the flops at the rate, as without the roofline.
struct PassSeconds {
  double forward = 0, grad_input = 0, grad_weight = 0, recompute = 0;
  double total() const { return forward + grad_input + grad_weight + recompute; }
};
PassSeconds roofline_pass_seconds(const RankWork& w, ElementSizes element, double rate,
                                  double bandwidth) {
  double forward = 0, grad_input = 0, grad_weight = 0, forward_flops = 0, flops = 0;
  for (const LinearShape& linear : w.gemm_linears) {
    const LinearGemmCosts g = linear_gemm_costs(linear, w.gemm_rows, element.stored,
                                                w.weights_gathered, element.kept);
    forward += roofline_seconds(g.forward, rate, bandwidth);
    grad_input += roofline_seconds(g.grad_input, rate, bandwidth);
    grad_weight += roofline_seconds(g.grad_weight, rate, bandwidth);
    forward_flops += g.forward.flops;
    flops += g.forward.flops + g.grad_input.flops + g.grad_weight.flops;
  }
  const double plain = w.gemm_flops - w.recompute_flops;
  if (flops <= 0) return {plain / 3 / rate, plain / 3 / rate, plain / 3 / rate,
                          w.recompute_flops / rate};
  return {plain * forward / flops, plain * grad_input / flops, plain * grad_weight / flops,
          w.recompute_flops * forward / forward_flops};
}

StepPrediction predict_rank(const PlanCandidate& c, const MachineDescription& m,
                            const SchemeShape& shape, const RankWork& w) {
  const Options& o = c.options;
  const int on_node = c.ranks_on_node > 0 ? c.ranks_on_node : std::min(c.world, m.ranks_per_node);
  const GemmRate gemm = m.gemm_rate(o.precision, o.math, on_node, c.threads_per_rank);
  const double rate = gemm.flops * m.gemm_efficiency(w.gemm_rows);
  const double bandwidth = m.bandwidth(on_node, c.threads_per_rank);
  // Values, activations and their gradients at `element`; typed storage keeps weight gradients
  // and the optimizer's state at sizes.kept.
  const ElementSizes sizes = element_sizes(o.precision, w.typed_16bit);
  const double element = sizes.stored;
  // A run with more ranks on its node than the machine's (time-sharing cores) is one node still.
  const int ranks_per_node = std::max(m.ranks_per_node, on_node);
  StepPrediction p;
  p.gemm = gemm;
  p.compute = w.gemm_flops / rate;
  const double plain_gemm = (w.gemm_flops - w.recompute_flops) / rate;
  double forward_gemm = 0, weight_gemm = 0;  // F's and W's GEMMs, for the bubble below
  if (gemm.tensor_cores) {
    // Tensor cores leave small GEMMs bound by their bytes: each call's operands, its weights
    // (re-read by every micro-batch and SUMMA step) and its gradient included, at the
    // bandwidth. The weights' reads are in that roofline, so no pass of them is added.
    const PassSeconds t = roofline_pass_seconds(w, sizes, rate, bandwidth);
    p.gemm_memory_bound = std::max(0.0, t.total() - p.compute);
    p.compute = t.total();
    forward_gemm = t.forward;
    weight_gemm = t.grad_weight;
  } else {
    // GEMM rates are measured in cache, but the optimizer's pass evicts the weights: 4-5 passes.
    const double forward_passes = w.recompute_flops > 0 ? 2 : 1;
    const double backward_passes = 3;
    const double weight_pass = w.gemm_parameters * element / bandwidth;
    // Weights gathered right before their GEMMs are read in cache: the gradient's passes remain.
    const double memory_passes = w.weights_gathered ? 2 : forward_passes + backward_passes;
    p.weights_from_memory = memory_passes * weight_pass;
    // Later micro-batches re-read the weights evicted meanwhile (weight_restream times 4 passes).
    if (w.micro_batches > 1 && m.weight_restream_bandwidth > 0)
      p.weights_from_memory += (w.micro_batches - 1.0) *
                               (forward_passes + backward_passes) / 4 * w.gemm_parameters *
                               element / m.restream_bandwidth(on_node, c.threads_per_rank,
                                                              w.gemm_rows);
    // F: a third of the plain flops and one weight pass; W another third and two.
    const double memory_pass = p.weights_from_memory / memory_passes;
    forward_gemm = plain_gemm / 3 + (w.weights_gathered ? 0 : memory_pass);
    weight_gemm = plain_gemm / 3 + 2 * memory_pass;
  }
  p.elementwise = (w.elementwise.forward + w.elementwise.backward) / bandwidth;
  const double update = o.optimizer.kind == OptimizerKind::adam
                            ? traffic::adam_update(static_cast<int64_t>(w.optimized_parameters))
                            : traffic::sgd_update(static_cast<int64_t>(w.optimized_parameters));
  p.optimizer = update * sizes.kept / m.update_bandwidth(on_node, c.threads_per_rank);
  // Offloaded state: the update streams it from disk and back, its reads and writes overlapping
  // the update's arithmetic (offload_bandwidth is measured streaming it so, on the whole node,
  // which its ranks share): the slower of the two.
  // Offloaded from a GPU, the host updates the state instead, as its chunks cross the link
  // (host_offload_bandwidth is measured so, one process on the node, whose ranks share it).
  if (w.exchanged_bytes > 0 && m.host_offload_bandwidth > 0)
    p.optimizer = w.exchanged_bytes / (m.host_offload_bandwidth / std::max(1, on_node));
  const double disk_share =
      m.streaming_share(m.offload_bandwidth, 0, on_node, c.threads_per_rank);
  if (w.offloaded_state_bytes > 0 && m.offload_bandwidth > 0)
    p.optimizer = std::max(p.optimizer, 2 * w.offloaded_state_bytes / disk_share);
  // Offloaded parameters come back from the same tier, one way, before their gathers (priced
  // whole: the run reads the next shard from disk on a thread, which hides part of it).
  if (w.fetched_bytes > 0 && w.offloaded_state_bytes > 0 && m.offload_bandwidth > 0)
    p.param_fetch = w.fetched_bytes / disk_share;
  else if (w.fetched_bytes > 0 && m.host_offload_bandwidth > 0)
    p.param_fetch = w.fetched_bytes / (m.host_offload_bandwidth / std::max(1, on_node));
  // Buffers started before compute and waited for after it, with no progress meanwhile, have
  // left the caches (ZeRO-3's overlapped units; DDP's buckets all move at the end).
  const bool cold = !m.comm_overlaps_compute && w.hiding.cold_buffers;
  for (const auto& [key, bytes] : w.bytes) {
    PredictedComm& comm = p.collectives[key];
    const GroupPlacement placement =
        place_group(shape.axes, shape.axis_of_group.at(group_of(key)), ranks_per_node,
                    c.rank_nodes);
    comm.group_size = placement.size;
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
    const auto shares = w.call_shares.find(key);
    if (shares == w.call_shares.end()) {
      comm.seconds = comm.calls * link.seconds(kind, comm.group_size, bytes / comm.calls, cold);
    } else if (!m.comm_overlaps_compute) {
      // Nothing moves during compute: the buckets share the link at the end as one message.
      comm.seconds = link.seconds(kind, comm.group_size, bytes, cold);
    } else {
      for (const double share : shares->second)
        comm.seconds += link.seconds(kind, comm.group_size, bytes * share, cold);
    }
    p.comm += comm.seconds;
    if (kind == CommKind::reduce_scatter && m.reduce_scatter_copies_send_buffer)
      p.send_buffer_copies += 2 * bytes / bandwidth;  // the input read, the temporary written
  }
  const double work = p.work();
  // F: the forward GEMMs and element-wise kernels; W the weight gradients' GEMMs; B the rest.
  const double forward = forward_gemm + w.elementwise.forward / bandwidth;
  const double backward = work - forward;
  if (w.bubble_fraction) {
    p.bubble_fraction = w.bubble_fraction(forward, backward, weight_gemm);
    p.bubble = work * p.bubble_fraction / (1 - p.bubble_fraction);
  }
  p.exposed_comm =
      m.comm_overlaps_compute ? exposed_communication(w.hiding, p, work, backward) : p.comm;
  // The copies happen inside the call that starts the reduce-scatter: communication time that
  // nothing hides, as the runs count it.
  p.exposed_comm += p.send_buffer_copies;
  p.comm += p.send_buffer_copies;
  p.data_loading = m.data_loading_seconds(w.loaded_rows, on_node, c.threads_per_rank, o.prefetch);
  // A pipeline's bubble is a wait for a message: its core is free for the loader's thread then.
  if (m.loads_ahead(o.prefetch, on_node, c.threads_per_rank))
    p.data_loading = std::max(0.0, p.data_loading - p.bubble);
  p.step = work + p.bubble + p.optimizer + p.param_fetch + p.exposed_comm + p.data_loading;
  p.samples_per_second = static_cast<double>(o.batch) / p.step;
  p.memory = w.memory;
  p.memory_available = m.memory_per_rank(on_node);
  return p;
}

}  // namespace

LinearGemmCosts linear_gemm_costs(const LinearShape& linear, double rows, double element,
                                  bool weight_in_cache, double gradient_element) {
  const double in = static_cast<double>(linear.in), out = static_cast<double>(linear.out);
  const double dw = gradient_element > 0 ? gradient_element : element;
  const double flops = 2 * rows * in * out, weight = weight_in_cache ? 0 : in * out;
  LinearGemmCosts g;
  g.forward = {flops, (rows * in + weight + rows * out) * element};
  if (linear.name != "embed") g.grad_input = {flops, (rows * out + weight + rows * in) * element};
  g.grad_weight = {flops, (rows * out + rows * in) * element + 2 * in * out * dw};
  return g;
}

double roofline_seconds(const GemmCost& gemm, double flops_rate, double bandwidth) {
  return std::max(gemm.flops / flops_rate, gemm.bytes / bandwidth);
}

StepPrediction predict_step(const PlanCandidate& candidate, const MachineDescription& machine) {
  SchemeShape shape;
  StepPrediction slowest;
  // A machine whose 16-bit GEMMs run on tensor cores is a GPU: memory as the CUDA backend holds
  // it (typed storage's GEMMs need no widening scratch there).
  PlanCandidate c = candidate;
  if (machine.gemm_rate(c.options.precision, c.options.math, 1, 1).tensor_cores &&
      storage_format(c.options.precision) != StorageFormat::full)
    c.options.device = "cuda";
  for (const RankWork& w : rank_work(c, shape)) {
    StepPrediction p = predict_rank(c, machine, shape, w);
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