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
  // bench_kernels files of the same model at several --batch values (one thread is enough):
  // the GEMM rate by rows, as a fraction of the files' median square GEMM (gemm_rows_fraction).
  std::vector<KernelRates> by_rows = {};
  // bench_kernels with adam_update at a size beyond the caches: optimizer_bandwidth (optional).
  const KernelRates* optimizer = nullptr;
  // bench_kernels files with weight_restream's two variants (one weight, many in turn), run as a
  // pipeline's ranks run, at one or more --batch values (micro-batch rows):
  // weight_restream_bandwidth from the first, weight_restream_rows_fraction from all (optional).
  std::vector<KernelRates> restream = {};
  // bench_kernels' copy, STREAM add and adam_update on one thread while the other cores idle:
  // core_memory_bandwidth and core_optimizer_bandwidth (optional).
  const KernelRates* core = nullptr;
  // bench_comm --evict-bytes of the same collective: the links' cold_bandwidth_bytes_fraction
  // (optional).
  const CommBenchRecord* cold_comm = nullptr;
  std::string cold_comm_path = {};
};

// GEMM rates: the fastest GEMM bench_kernels timed per type (its large square is the ceiling);
// bandwidth: the faster of its copy and STREAM add; links: bench_comm's all-reduce (else its first
// sweep): the latency of a ring step from the smallest message, the busbw of the largest. One node
// measured gives the same figures to both links, saying so. With by_rows: per file, the mean rate
// of the model's GEMMs at its batch (rows m, or the inner k of a weight gradient) over the median
// of the files' square GEMMs. With cold_comm: each size's busbw with the buffers out of the caches
// over its busbw in them. With optimizer: adam_update's GB/s. With restream: the weights' bytes
// over the time weight_restream takes per weight beyond the in-cache variant's (several files: a
// line through log(rate) against log(rows)). With core: one thread's copy (or STREAM add) and
// adam_update GB/s, unscaled. On CPUs, the kernels' sample_load (when timed): the seconds of one
// sample on one thread, sample_load_seconds. CPU backends share a node's rates among its ranks and
// do not overlap communication with compute.
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
