#include "bench/support/comm_bench_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "src/options/cli_validators.h"
#include "src/base/errors.h"

namespace mlps::comm_bench {
namespace {

CLI::Validator byte_size(int64_t least = 1) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        const auto bytes = parse_bytes(text);
        if (!bytes) return "'" + text + "' is not a size in bytes (e.g. 64, 64K, 32M, 1G)";
        if (*bytes < least) return "must be at least 1 byte, not " + text;
        return "";
      },
      "BYTES");
}

}  // namespace

std::optional<int64_t> parse_bytes(const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || value < 0) return std::nullopt;
  int shift = 0;
  if (used + 1 == text.size()) {
    switch (text[used]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: return std::nullopt;
    }
  } else if (used != text.size()) {
    return std::nullopt;
  }
  if (value > (int64_t{1} << (50 - shift))) return std::nullopt;  // beyond any buffer
  return static_cast<int64_t>(value) << shift;
}

bool parse_comm_bench_options(int argc, char** argv, int rank, CommBenchOptions& o) {
  CLI::App app("Sweep message sizes for each collective of the Comm seam (MPI or NCCL) and "
               "report time, algbw, busbw and wrong elements, as nccl-tests does.",
               "bench_comm");
  app.option_defaults()->always_capture_default();
  app.add_option("-b,--minbytes", o.min_bytes, "smallest message size (K, M, G suffixes)")
      ->check(byte_size());
  app.add_option("-e,--maxbytes", o.max_bytes, "largest message size (default 32M on cuda, 8M "
                 "on cpu)")->check(byte_size());
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this between steps")
      ->check(integer_at_least(2));
  app.add_option("-n,--iters", o.iters, "timed iterations per size")
      ->check(integer_at_least(1));
  app.add_option("-w,--warmup_iters", o.warmup_iters, "untimed iterations before them")
      ->check(integer_at_least(0));
  app.add_option("-c,--check", o.check_iters, "iterations checked for correctness per size "
                 "(0: none)")->check(integer_at_least(0));
  app.add_option("--op", o.op, "collective: allreduce, allgather, reduce_scatter, broadcast, "
                 "sendrecv or all")
      ->check(CLI::IsMember({"all", "allreduce", "allgather", "reduce_scatter", "broadcast",
                             "sendrecv"}));
  app.add_option("-d,--datatype", o.datatype, "element type: float or double")
      ->check(CLI::IsMember({"float", "double"}));
  app.add_option("--device", o.device, "auto (cuda when built with CUDA and a GPU is visible), "
                 "cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--comm", o.comm, "collectives backend: auto, mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  app.add_option("--out", o.out, "HDF5 result file (default results/bench/comm-<backend>-"
                 "<ranks>.h5)");
  app.add_option("--evict-bytes", o.evict_bytes, "before each timed call, each rank writes this "
                 "much other memory (evicting its buffers from the caches, as a training step's "
                 "compute does between a collective's start and its wait) and the call is timed "
                 "alone after a barrier; 0: the timed calls run back to back, as in nccl-tests")
      ->check(byte_size(0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return false;
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  return true;
}

}  // namespace mlps::comm_bench
