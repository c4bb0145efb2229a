#pragma once
// bin/bench_kernels' JSON (Google Benchmark's --benchmark_out) read back: each benchmark's
// counters (TFLOP/s, GB/s) by name without Google Benchmark's suffixes. Of several repetitions
// the fastest is kept (a floor and a machine's ceiling take the machine at its best); aggregates
// are skipped, but a file holding only aggregates still gives its medians. For bin/bench_floor
// and bin/plan --calibrate.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mlps {

class KernelRates {
 public:
  // InputError naming the file when it cannot be read or is not bench_kernels JSON.
  explicit KernelRates(const std::string& path);
  // InputError naming the benchmark when it or its counter is absent.
  double counter(const std::string& name, const std::string& counter) const;
  bool has_prefix(const std::string& prefix) const;
  // The first benchmark whose name starts with `prefix` (sizes vary with the model options).
  double counter_by_prefix(const std::string& prefix, const std::string& counter) const;
  // Every benchmark whose name starts with `prefix`, with its `counter`.
  std::vector<std::pair<std::string, double>> counters_by_prefix(const std::string& prefix,
                                                                 const std::string& counter) const;
  const std::string& path() const { return path_; }
  // The --batch its model-shaped benchmarks ran at (0: not recorded).
  int model_batch() const { return model_batch_; }
  // The threads its CPU kernels ran on (0: not recorded, files before it was).
  int cpu_threads() const { return cpu_threads_; }
  // The BLAS and its kernels the rates came from ("" in files from before it was recorded).
  const std::string& blas() const { return blas_; }

 private:
  std::string path_;
  int cpu_threads_ = 0;
  int model_batch_ = 0;
  std::string blas_;
  std::map<std::string, nlohmann::json> entries_;
};

}  // namespace mlps
