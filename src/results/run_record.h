#pragma once
// Everything one run writes to its HDF5 result file (schema: results/README.md), filled by rank 0
// from gathered per-rank data and published whole (hdf5::write_file_atomically).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/timing/iteration_table.h"

namespace mlps {

struct CommRecord {
  IterationRankTable time_seconds;
  IterationRankTable bytes;
  std::string kind;        // the collective: allreduce, allgather, reduce_scatter, broadcast, sendrecv
  int64_t group_size = 0;  // ranks of the communicator it ran on (for busbw)
};

struct Verification {
  std::string verdict = "not run";  // "PASS", "FAIL" or "not run"
  double max_relative_error = 0.0;
  double tolerance = 0.0;
  std::string worst_at;  // where the worst error is: "loss at iteration N" or a tensor name
  double serial_fp32_error = 0.0;  // fp32 runs: serial fp32's own error against fp64
};

// What bin/plan's model predicted for this run (--machine; src/plan/run_prediction.h), recorded
// beside the measurement: /prediction, present only when a machine description was given.
struct RecordedPrediction {
  std::string machine;       // the description's name; empty: no prediction
  std::string machine_file;  // its path
  std::map<std::string, double> figures;  // step_seconds, exposed_comm_seconds, peak_bytes, ...
  bool oversubscribed = false;  // more ranks on a node than its description's ranks per node
};

struct RunRecord {
  // Root attributes, strings and integers (schema.h lists the required ones).
  std::map<std::string, std::string> string_attributes;
  std::map<std::string, int64_t> integer_attributes;
  std::map<std::string, IterationRankTable> timing;  // /timing/<phase>
  // /counters/<name>: per step, the Device's allocations and frees; where the runtime counts
  // them (emulated GPU), launches, host_syncs, runtime_allocations and runtime_frees.
  std::map<std::string, IterationRankTable> counters;
  std::map<std::string, CommRecord> comm;            // /comm/<kind>/{time,bytes}
  std::vector<double> loss;                          // /train/loss [iterations]
  std::vector<double> test_accuracy;                 // /train/test_accuracy [epochs evaluated]
  std::vector<double> loss_scale;                    // /train/loss_scale [iterations] (1: none)
  std::vector<int64_t> peak_bytes;                   // /memory/peak_bytes [ranks]
  std::vector<int64_t> estimated_bytes;  // /memory/estimated_bytes [ranks]: the accounting
  std::vector<int64_t> peak_rss_bytes;   // /memory/peak_rss_bytes [ranks]: the process's VmHWM
  std::vector<int64_t> disk_bytes;       // /memory/disk_bytes [ranks]: state offloaded to disk
  std::vector<int64_t> rank_nodes;   // /placement/node [ranks]: each rank's node (0, 1, ...)
  std::vector<int64_t> local_ranks;  // /placement/local_rank [ranks]: its rank on that node
  Verification verification;                         // /verification attributes
  RecordedPrediction prediction;                     // /prediction attributes (optional)
};

void write_results_hdf5(const std::string& path, const RunRecord& record);
// Reads a file written by write_results_hdf5 (tests and tools); throws InputError naming the
// file and the missing field when the file does not follow the schema.
RunRecord read_results_hdf5(const std::string& path);

}  // namespace mlps
