// bin/bench_comm's options: nccl-tests' flags and size conventions, plus the Comm seam's choices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlps::comm_bench {

// Default largest message: nccl-tests' 32M on GPUs, 8M on the CPU backend. With ranks
// oversubscribing cores a call costs scheduler time slices whatever its size, so the default
// sweep of all five collectives (4 ranks on 2 idle cores) takes about half a minute.
constexpr int64_t kDefaultMaxBytesCuda = int64_t{32} << 20;
constexpr int64_t kDefaultMaxBytesCpu = int64_t{8} << 20;

struct CommBenchOptions {
  std::string min_bytes = "8";
  std::string max_bytes;  // empty: the device's default
  int64_t step_factor = 2;
  int64_t iters = 20;
  int64_t warmup_iters = 5;
  int64_t check_iters = 1;
  std::string op = "all";
  std::string datatype = "float";
  std::string device = "auto";
  std::string comm = "auto";
  std::string out;  // empty: results/bench/comm-<backend>-<ranks>.h5
  std::string evict_bytes = "0";  // written before each timed call, each call timed alone
};

// "64", "64K", "32M", "1G" (binary multiples, as nccl-tests reads -b and -e); nullopt if not.
std::optional<int64_t> parse_bytes(const std::string& text);

// Returns false when --help was asked for (after printing it on rank 0); throws InputError for
// a bad option.
bool parse_comm_bench_options(int argc, char** argv, int rank, CommBenchOptions& o);

}  // namespace mlps::comm_bench
