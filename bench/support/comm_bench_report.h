// bin/bench_comm's output: nccl-tests' table on rank 0's stdout (header, devices, one table per
// collective, closing summary) and the HDF5 result file.
#pragma once

#include <cstdint>
#include <string>

#include "bench/support/collective_engines.h"
#include "bench/support/comm_bench_options.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "src/device/device.h"
#include "src/results/comm_bench_writer.h"

namespace mlps::comm_bench {

// What one run swept on, for its header and its file's attributes.
struct CommBenchSetup {
  CommBackend backend;
  DeviceKind device;
  std::string hosts;
  int ranks = 0;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  int64_t evict_bytes = 0;  // --evict-bytes
  std::string start_time;
  std::string command_line;
};

// The closing block's totals over every size of every sweep.
struct CommBenchSummary {
  int64_t wrong = 0;     // wrong elements; 0 when nothing was checked
  bool checked = false;  // whether any size was checked
  double avg_busbw = 0;  // GB/s, mean over all sizes
};

// Rank 0 only: the run's header lines.
void print_run_header(const CommBenchSetup& setup, const CommBenchOptions& o);

// nccl-tests' "Using devices" block: one line per rank, gathered to rank 0. Collective.
void print_ranks(const RankPlacement& placement, DeviceKind device, int gpu);

// Rank 0 only: a collective's title and column headers, then one row per size.
void print_sweep_title(const CollectiveEngine& engine);
void print_sweep_row(const CollectiveShape& s, const char* type_name, double seconds,
                     double algbw, double busbw, int64_t wrong);

CommBenchSummary summarize(const CommBenchRecord& record);

// Rank 0 only: the closing block (wrong elements, average bus bandwidths overall and per sweep).
void print_summary(const CommBenchSummary& summary, const CommBenchRecord& record);

// Rank 0 only: adds the run's attributes to `record`, writes it to `path` and prints its name.
void write_result_file(const std::string& path, const CommBenchSetup& setup,
                       const CommBenchOptions& o, const CommBenchSummary& summary,
                       CommBenchRecord& record);

}  // namespace mlps::comm_bench
