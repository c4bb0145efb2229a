#pragma once
// bin/plan --calibrate: this machine's description (machine_description.h) from what
// bin/bench_kernels and bin/bench_comm measured on it, each figure sourced to its file.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/plan/kernel_rates.h"
#include "src/results/comm_bench_writer.h"

namespace mlps {

struct CalibrationInputs {
  const KernelRates& kernels;
  const CommBenchRecord& comm;
  std::string comm_path;
  int ranks_per_node = 1;
  double memory_bytes = 0;  // per rank, or per node on CPUs
  std::string memory_source;
  // bench_kernels files at several --batch values (optional): gemm_rows_fraction.
  std::vector<KernelRates> by_rows = {};
  // bench_kernels with adam_update beyond the caches (optional): optimizer_bandwidth.
  const KernelRates* optimizer = nullptr;
  // bench_kernels' weight_restream pair at one or more --batch values (optional).
  std::vector<KernelRates> restream = {};
  // bench_kernels on one thread while the other cores idle (optional): core_*_bandwidth.
  const KernelRates* core = nullptr;
  // bench_comm --evict-bytes of the same collective (optional): cold_bandwidth_bytes_fraction.
  const CommBenchRecord* cold_comm = nullptr;
  std::string cold_comm_path = {};
  // bench_comm over 2 or more nodes (optional): the inter-node link, `comm` then being the
  // intra-node one (run on one node). Without it, `comm` gives both: measured across nodes
  // when its hosts are several, else the inter-node link says it was not measured.
  const CommBenchRecord* inter_comm = nullptr;
  std::string inter_comm_path = {};
  // bench_kernels' offload_adam/disk run in as many processes at once as the node runs ranks
  // (optional): offload_bandwidth is the node's, all their bytes over the longest one's time.
  // Without it, `kernels`' one process.
  std::vector<KernelRates> offload = {};
};

// This machine's description from `in`'s files, each figure's derivation in its "source"
// (docs/planning.md). CPU ranks share their node's rates and do not overlap communication with
// compute.
nlohmann::json calibrated_machine(const CalibrationInputs& in);

// A link's cold_bandwidth_bytes_fraction: at each size both sweeps timed, the busbw with the
// buffers out of the caches over the busbw in them, at most 1 (a colder call is never faster).
nlohmann::json cold_fraction_by_size(const CommBenchSweep& hot, const CommBenchSweep& cold,
                                     const std::string& source);

// A link's bandwidth_bytes_fraction from one bench_comm sweep: each size's busbw over the
// largest's, a size's time the least of its own and every larger size's (a smaller message is
// never slower: it could be padded), so one slow size is no dip in the curve.
nlohmann::json bandwidth_by_size(const CommBenchSweep& s, const std::string& source);

}  // namespace mlps
