#pragma once
// A cluster as bin/plan prices it (inputs/machines/*.json): per rank, the GEMM rate in the
// type the run computes in and the bandwidth of the element-wise kernels and the optimizer; per
// link (within a node, between nodes), the time of a collective as alpha-beta: one latency per
// ring step plus the bytes nccl-tests' bus-bandwidth counts at the link's bus bandwidth. Every
// figure in the file carries its source ({"value": 4.5e11, "source": "..."}).
#include <string>
#include <utility>
#include <vector>

#include "src/comm/comm_log.h"
#include "src/prefetch_mode.h"

namespace mlps {

enum class Precision;

struct LinkModel {
  double latency_seconds = 0;  // per ring step (n − 1 for all-gather, 2(n − 1) for all-reduce)
  // bytes/s, as nccl-tests' busbw; between nodes per rank (its own NIC): a group with k ranks
  // on each node crosses at k times this, up to the bandwidth within a node.
  double bus_bandwidth = 1;
  // Optional (bytes, fraction) ascending: the busbw of a collective of that size (nccl-tests'
  // size) as a fraction of bus_bandwidth, interpolated in log(bytes); the measured times hold
  // each size's latency, so the latency then only sets a floor. Empty: the same at every size.
  std::vector<std::pair<double, double>> bandwidth_bytes_fraction = {};
  // Optional (bytes, fraction) ascending: a collective's busbw at that size with its buffers out
  // of the caches (bench_comm --evict-bytes) over its busbw in them. Empty: no difference.
  std::vector<std::pair<double, double>> cold_bytes_fraction = {};
  // One collective of `bytes` (nccl-tests' size) over `ranks` ranks; 0 for a group of one.
  // `cold`: its buffers have left the caches since they were written.
  double seconds(CommKind kind, int ranks, double bytes, bool cold = false) const;
};

struct MachineDescription {
  std::string name;
  int ranks_per_node = 1;
  // CPU nodes: the ranks on a node share its cores, so its rates are divided among them.
  bool ranks_share_node = false;
  // Whether a collective in flight progresses while the rank computes (NCCL on its own stream);
  // not with MPI on CPU cores that the compute keeps busy: then every collective is exposed.
  bool comm_overlaps_compute = true;
  // Whether posting a reduce-scatter copies its whole send buffer first, on the rank's own core
  // (MPICH's algorithms reduce into a temporary, as an MPI send buffer is read-only; NCCL
  // reduces in place): then each reduce-scatter's input is read and written once more.
  bool reduce_scatter_copies_send_buffer = false;
  double memory_bytes = 0;      // per rank (per node when ranks share it)
  double gemm_fp32_flops = 0;   // per rank (per node when shared), true fp32 (no TF32)
  double gemm_fp64_flops = 0;
  double memory_bandwidth = 0;  // bytes/s: element-wise kernels, GEMM operands from memory
  // bytes/s of the optimizer's update (kernel_traffic.h's count): the Adam kernel's own rate,
  // which streams four arrays at once faster than a copy; optional, else memory_bandwidth.
  double optimizer_bandwidth = 0;
  // CPU nodes, optional (0: unknown): what one core streams when the others idle (a copy's and
  // the optimizer's). The node's bandwidth is shared by its busy cores, each up to this.
  double core_memory_bandwidth = 0;
  double core_optimizer_bandwidth = 0;
  // bytes/s at which a pipeline's micro-batches after the first read the stage's weights again
  // (evicted between micro-batches by the other layers' and ranks' traffic); optional, else 0:
  // no cost (GEMM rates measured with the weights in memory already include it).
  double weight_restream_bandwidth = 0;
  // Optional (rows, fraction) ascending: the re-read rate at a micro-batch of that many rows as a
  // fraction of weight_restream_bandwidth (GEMMs on fewer rows hide more of the reads); empty:
  // the same at every size.
  std::vector<std::pair<double, double>> weight_restream_rows_fraction;
  // CPU nodes, optional (0: unknown): seconds one core takes to make one training sample, which
  // each rank's data loader does on a thread of its own while the step computes.
  double sample_load_seconds = 0;
  LinkModel intra_node, inter_node;
  // The GEMM rate at a given number of rows (the batch dimension a GEMM runs on: a replica's, a
  // micro-batch's, a grid row's), as a fraction of the rates above: (rows, fraction) ascending;
  // empty: every GEMM at the full rate.
  std::vector<std::pair<double, double>> gemm_rows_fraction;

  // gemm_rows_fraction at `rows`: interpolated in log(rows), the end values beyond the table.
  double gemm_efficiency(double rows) const;

  // The share of the node's rates a rank gets when `ranks_on_node` ranks run on it: all of them
  // on a GPU; on a CPU node (ranks_per_node its cores) the cores its `threads_per_rank` use (0:
  // the cores split among its ranks, as the executables do), no more than its time slice when
  // the ranks' threads outnumber the cores.
  double rate_share(int ranks_on_node, int threads_per_rank = 0) const;
  // The node's cores its ranks' compute threads keep busy (0 on a GPU node).
  int busy_threads(int ranks_on_node, int threads_per_rank = 0) const;
  // The rate a rank gets when `ranks_on_node` ranks run on its node.
  double gemm_flops(Precision precision, int ranks_on_node, int threads_per_rank = 0) const;
  // A rank's part of a streaming rate: the node's `node_rate` split among its busy cores (the
  // ranks' threads), each core at most `core_rate` (0: no such limit; then rate_share's part).
  double streaming_share(double node_rate, double core_rate, int ranks_on_node,
                         int threads_per_rank) const;
  double bandwidth(int ranks_on_node, int threads_per_rank = 0) const;
  double update_bandwidth(int ranks_on_node, int threads_per_rank = 0) const;
  // The re-read rate of a rank whose micro-batches have `rows` rows (0: the figure as it is).
  double restream_bandwidth(int ranks_on_node, int threads_per_rank = 0, double rows = 0) const;
  double memory_per_rank(int ranks_on_node) const;
  // Whether a rank's loader runs on its own thread (prefetch_mode.h) with `ranks_on_node` ranks
  // of `threads_per_rank` compute threads (0: the executables' split of a CPU node's cores).
  bool loads_ahead(PrefetchMode mode, int ranks_on_node, int threads_per_rank = 0) const;
  // What a rank's step loses to its loader making `rows` samples. Ahead: nothing while the node
  // has a core no rank's thread uses (or a GPU node's host cores), else the node's ranks' loading
  // time spread over its cores. Not ahead: the samples' time, in the step's data phase.
  double data_loading_seconds(double rows, int ranks_on_node, int threads_per_rank,
                              PrefetchMode mode) const;
};

// Reads and checks a description: InputError naming the file and the missing or bad key.
MachineDescription load_machine_description(const std::string& path);

}  // namespace mlps
