#pragma once
// A cluster as bin/plan prices it (inputs/machines/*.json): per rank, the GEMM rate of the
// run's GEMM math (gemm_rate()) and the bandwidth of the element-wise kernels and the optimizer; per
// link (within a node, between nodes), the time of a collective as alpha-beta: one latency per
// ring step plus the bytes nccl-tests' bus-bandwidth counts at the link's bus bandwidth. Every
// figure in the file carries its source ({"value": 4.5e11, "source": "..."}).
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "src/comm/comm_log.h"
#include "src/options/prefetch_mode.h"

namespace mlps {

enum class Precision;

// The rate a run's GEMMs are priced at and the description's figure it comes from.
struct GemmRate {
  std::string math;    // what multiplies: "fp64", "fp32", "tf32", "bf16" or "fp16"
  std::string figure;  // its key: "gemm_bf16_flops"; "gemm_fp32_flops" where that is absent
  double flops = 0;    // flop/s per rank
  // A tensor-core figure of its own: each GEMM is then priced as a roofline (step_prediction.h).
  bool tensor_cores = false;
  // "bf16 tensor cores at 780 TFLOP/s", "fp32 at 51.5 TFLOP/s", "bf16 at the fp32 rate, ...".
  std::string describe() const;
};

// The table's intra_node.* / inter_node.* (cold_bytes_fraction: cold_bandwidth_bytes_fraction).
struct LinkModel {
  double latency_seconds = 0;  // per ring step
  double bus_bandwidth = 1;    // bytes/s
  std::vector<std::pair<double, double>> bandwidth_bytes_fraction = {};
  std::vector<std::pair<double, double>> cold_bytes_fraction = {};
  // One collective of `bytes` (nccl-tests' size) over `ranks` ranks; 0 for a group of one.
  // `cold`: its buffers have left the caches since they were written.
  double seconds(CommKind kind, int ranks, double bytes, bool cold = false) const;
};

// Fields: inputs/machines/README.md's table (per rank; per node when ranks_share_node).
struct MachineDescription {
  std::string name;
  int ranks_per_node = 1;
  bool ranks_share_node = false;
  bool comm_overlaps_compute = true;
  bool reduce_scatter_copies_send_buffer = false;
  double memory_bytes = 0;
  double gemm_fp32_flops = 0;  // flop/s
  double gemm_fp64_flops = 0;
  double gemm_bf16_flops = 0;  // tensor cores; 0: absent, as the optional figures below
  double gemm_fp16_flops = 0;
  double gemm_tf32_flops = 0;
  double memory_bandwidth = 0;  // bytes/s, as every bandwidth here
  double optimizer_bandwidth = 0;
  double core_memory_bandwidth = 0;  // 0: absent, as the optional figures below
  double core_optimizer_bandwidth = 0;
  double weight_restream_bandwidth = 0;
  // Optimizer state streamed through an update from a scratch file (bin/data --offload), bytes
  // read plus written per second by the node (its ranks share it); 0: absent (offloaded state
  // then moves for free).
  double offload_bandwidth = 0;
  // A GPU's update with its optimizer state in host memory (bin/data --offload on a GPU): the
  // bytes crossing between the GPU and the host per second (gradients down, values up), the
  // host's update of the state included, one GPU's process on the node (its ranks share the
  // host); 0: absent (the GPU's own update is priced instead).
  double host_offload_bandwidth = 0;
  std::vector<std::pair<double, double>> weight_restream_rows_fraction;
  double sample_load_seconds = 0;
  LinkModel intra_node, inter_node;
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
  // The GEMM rate of a run of `precision` and --math `math` (Options::math) when
  // `ranks_on_node` ranks run on its node: the one place that picks the figure. fp64: DGEMM's;
  // else that of gemm_compute(precision, math): bf16, fp16 or tf32 tensor cores where the
  // description has their figure, otherwise (a CPU) the fp32 rate.
  GemmRate gemm_rate(Precision precision, GemmCompute math, int ranks_on_node,
                     int threads_per_rank = 0) const;
  double gemm_flops(Precision precision, GemmCompute math, int ranks_on_node,
                    int threads_per_rank = 0) const {
    return gemm_rate(precision, math, ranks_on_node, threads_per_rank).flops;
  }
  // A run without --math tf32.
  double gemm_flops(Precision precision, int ranks_on_node, int threads_per_rank = 0) const {
    return gemm_flops(precision, GemmCompute::fp32, ranks_on_node, threads_per_rank);
  }
  // A rank's part of a streaming rate: the node's `node_rate` split among its busy cores (the
  // ranks' threads), each core at most `core_rate` (0: no such limit; then rate_share's part).
  double streaming_share(double node_rate, double core_rate, int ranks_on_node,
                         int threads_per_rank) const;
  double bandwidth(int ranks_on_node, int threads_per_rank = 0) const {
    return streaming_share(memory_bandwidth, core_memory_bandwidth, ranks_on_node,
                           threads_per_rank);
  }
  double update_bandwidth(int ranks_on_node, int threads_per_rank = 0) const {
    return streaming_share(optimizer_bandwidth, core_optimizer_bandwidth, ranks_on_node,
                           threads_per_rank);
  }
  // The re-read rate of a rank whose micro-batches have `rows` rows (0: the figure as it is).
  double restream_bandwidth(int ranks_on_node, int threads_per_rank = 0, double rows = 0) const;
  double memory_per_rank(int ranks_on_node) const {
    return ranks_share_node && ranks_on_node > 1 ? memory_bytes / ranks_on_node : memory_bytes;
  }
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
// The same checks on a description not yet written (bin/plan --calibrate checks before it
// publishes, so a refused description never reaches its file); `label` names it in messages.
MachineDescription check_machine_description(const nlohmann::json& description,
                                             const std::string& label);

}  // namespace mlps
