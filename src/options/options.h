#pragma once
// The options every executable shares (DESIGN.md, Conventions). One CLI11 table drives parsing,
// --help and --config JSON files; scheme executables add their own flags to the same table.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "src/options/prefetch_mode.h"
#include "src/model/model_config.h"
#include "src/optim/optimizer_config.h"

namespace mlps {

// fp32/fp64: every tensor in that type. bf16/fp16: mixed precision, computed in fp32 with
// activations, weights and gradients rounded to 16 bits, fp32 master weights and optimizer.
enum class Precision { fp32, fp64, bf16, fp16 };
const char* to_string(Precision precision);
// How a run's tensors are stored on the device (StorageFormat::full for fp32 and fp64).
StorageFormat storage_format(Precision precision);
// The multiplications of a run's GEMMs (kernels.h): the storage format's for bf16/fp16, --math's
// for fp32, exact for fp64.
GemmCompute gemm_compute(Precision precision, GemmCompute math);

struct Options {
  ModelConfig model;
  int64_t batch = 32;  // global batch
  int64_t epochs = 0;  // > 0 without an explicit --iters: run this many epochs
  int64_t iters = 20;  // iterations to run, unless --epochs is given and --iters is not
  int64_t warmup = 2;
  OptimizerConfig optimizer;
  uint64_t seed = 42;
  std::string data = "synthetic";
  PrefetchMode prefetch = PrefetchMode::automatic;
  std::string device = "auto";
  std::string comm = "auto";
  Precision precision = Precision::fp32;
  // --math tf32: fp32 GEMMs on TF32 tensor cores (GPUs only); fp32 is true fp32.
  GemmCompute math = GemmCompute::fp32;
  bool fp32_grad_comm = false;  // bf16/fp16: gradients communicated in fp32 instead of 16 bits
  bool inference = false;       // forward only over the test split: latency and samples/s
  std::string out;  // empty: results/<scheme>-<time>.h5
  std::string trace;  // empty: no timeline; else its trace-event JSON file (trace_recorder.h)
  // Machine description whose prediction a run records (src/plan/run_prediction.h): empty for
  // this machine's calibrated one when it exists, "none" for no prediction.
  std::string machine;
  int64_t print_every = 20;
  int64_t eval_samples = 0;  // 0: the whole test split
  bool verify = false;
  // --timeout: seconds without a completed step or evaluation batch before a rank reports its
  // last communication calls and ends the job (0: never); default MLPSCALE_TIMEOUT, else half
  // an hour: far beyond any step that fits in memory here, and a stopped or lost rank no longer
  // holds the others (and the job's allocation) until its time limit.
  double timeout = 1800;
  // Train even when the memory accounting says the run does not fit (available_memory.h).
  bool skip_memory_check = false;
  // --check-grid N: check the grid rules for N ranks, print the grid and exit (0: never).
  int64_t check_grid = 0;
  // --list-options: print the option names (options_json()) and exit.
  bool list_options = false;

  std::string resolved_json;  // every option's final value, for the result file
};

class OptionParser {
 public:
  OptionParser(const std::string& program, const std::string& description);
  // For scheme-specific flags, added before parse().
  CLI::App& app() { return *app_; }
  // Returns false when --help was asked for (help text in help_text()). Bad options, values or
  // config files throw InputError with one line naming the problem.
  bool parse(int argc, char** argv);
  const Options& options() const { return options_; }
  std::string help_text() const { return app_->help(); }
  // {"program": ..., "shared": [...], "scheme": [...]}: the long names (without dashes) of the
  // options every executable shares and of those the scheme added, in --help's order.
  std::string options_json() const;

 private:
  void validate();
  std::string describe_parse_error(const CLI::ParseError& e) const;
  std::unique_ptr<CLI::App> app_;
  std::vector<std::string> shared_;  // the shared table's long names
  Options options_;
  std::string block_ = "mlp", optimizer_ = "adam", precision_ = "fp32", math_ = "fp32", prefetch_ = "auto";
};

}  // namespace mlps
