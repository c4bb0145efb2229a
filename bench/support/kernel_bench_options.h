// bin/bench_kernels' own options; Google Benchmark's --benchmark_* flags pass through them.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "src/model/model_config.h"

namespace mlps::kernel_bench {

struct KernelBenchOptions {
  ModelConfig model;
  int64_t batch = 32;
  std::vector<std::string> backends{"cpu", "cuda"};
  bool backends_given = false;  // an unavailable backend is an error only when asked for
  std::string offload_dir;      // --offload-dir: where the offload benchmarks' files go (none)
};

// Parses our own options; returns the arguments left for Google Benchmark, or an exit code.
// An argument that is neither ours nor a --benchmark_* flag is an error.
std::variant<std::vector<std::string>, int> parse_kernel_bench_options(int argc, char** argv,
                                                                        KernelBenchOptions& options);

}  // namespace mlps::kernel_bench
