#pragma once
// The result file of bin/bench_comm: one message-size sweep per collective, laid out as
// results/README.md ("Collective benchmark files") documents. Not a RunRecord: a sweep has sizes,
// not training iterations.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlps {

// One collective's sweep; every vector has one entry per message size, in sweep order.
struct CommBenchSweep {
  std::string op;                    // group name: allreduce, allgather, reduce_scatter, ...
  std::vector<int64_t> bytes;        // message size as nccl-tests counts it
  std::vector<int64_t> count;        // elements in those bytes
  std::vector<double> time_seconds;  // per call: max over ranks of each rank's mean
  std::vector<double> algbw;         // GB/s (1e9 bytes/s): bytes / time_seconds
  std::vector<double> busbw;         // GB/s: algbw × nccl-tests' bus factor
  std::vector<int64_t> wrong;        // wrong elements over ranks and check iterations; -1: unchecked
};

struct CommBenchRecord {
  std::map<std::string, std::string> string_attributes;  // backend, device, hosts, ...
  std::map<std::string, int64_t> integer_attributes;     // ranks, iters, ...
  std::map<std::string, double> real_attributes;         // avg_busbw
  std::vector<CommBenchSweep> sweeps;
};

// Writes `record` to `path`, published whole (hdf5::write_file_atomically, which creates the
// parent directories), adding the root attribute kind = "bench_comm" itself. Throws
// std::runtime_error naming the path and what failed, e.g. a sweep whose vectors differ in length.
void write_comm_bench_hdf5(const std::string& path, const CommBenchRecord& record);

// Reads such a file back, as much as bin/plan --calibrate needs: the backend, device, hosts and
// ranks attributes and, per collective, bytes, time_seconds and busbw. InputError naming the
// file and what is missing when it is not a bench_comm file.
CommBenchRecord read_comm_bench_hdf5(const std::string& path);

}  // namespace mlps
