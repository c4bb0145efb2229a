#include "bench/support/kernel_bench_options.h"

#include <regex.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "src/base/errors.h"

namespace mlps::kernel_bench {

namespace {

// Google Benchmark reports a bad regular expression and carries on (exit 0, nothing run), and
// meets a negative repetition count with a banner and a crash: both are checked here first.
std::string pass_through_problem(const std::string& arg) {
  const auto value_of = [&](const std::string& flag) -> std::optional<std::string> {
    if (arg.rfind(flag + "=", 0) != 0) return std::nullopt;
    return arg.substr(flag.size() + 1);
  };
  if (const auto regex = value_of("--benchmark_filter")) {
    regex_t compiled;  // Google Benchmark's own matcher: POSIX extended expressions
    const int status = regcomp(&compiled, regex->c_str(), REG_EXTENDED | REG_NOSUB);
    if (status != 0) {
      char message[256];
      regerror(status, &compiled, message, sizeof(message));
      return "--benchmark_filter: '" + *regex + "' is not a regular expression (" + message + ")";
    }
    regfree(&compiled);
  }
  if (const auto count = value_of("--benchmark_repetitions")) {
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(*count, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != count->size() || n < 1)
      return "--benchmark_repetitions must be a positive integer, not '" + *count + "'";
  }
  return "";
}

}  // namespace

std::variant<std::vector<std::string>, int> parse_kernel_bench_options(int argc, char** argv,
                                                                        KernelBenchOptions& options) {
  CLI::App app{"Kernel micro-benchmarks: every GEMM of one training step of the model, the "
               "element-wise kernels at its sizes and a device copy, per backend, f32 and f64.",
               "bench_kernels"};
  app.allow_extras();
  const CLI::Validator positive(
      [](std::string& value) {
        int64_t v = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), v);
        const bool ok = error == std::errc() && end == value.data() + value.size() && v > 0;
        return ok ? std::string() : "must be a positive integer, not '" + value + "'";
      },
      "POSITIVE");
  app.add_option("--image-size", options.model.image_size, "image side S (S*S input features)")
      ->check(positive)->capture_default_str();
  app.add_option("--hidden", options.model.hidden, "hidden width H")
      ->check(positive)->capture_default_str();
  app.add_option("--layers", options.model.layers, "number of blocks")
      ->check(positive)
      ->check(CLI::Range(int64_t{1}, kMaxLayers))
      ->capture_default_str();
  app.add_option("--ffn-mult", options.model.ffn_mult, "FFN width as a multiple of H")
      ->check(positive)->capture_default_str();
  app.add_option("--ffn-hidden", options.model.ffn_width, "FFN width itself (0: ffn-mult × H)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--batch", options.batch, "rows of every activation (the global batch)")
      ->check(positive)->capture_default_str();
  auto* backends = app.add_option("--backends", options.backends, "backends to benchmark")
                       ->delimiter(',')
                       ->check(CLI::IsMember({"cpu", "cuda"}))
                       ->capture_default_str();
  app.add_option("--offload-dir", options.offload_dir, "also time the scratch file of bin/data "
                 "--offload-to disk:DIR in this folder: sequential write and read, and Adam "
                 "streaming its state through it (offload_*)")
      ->check(CLI::ExistingDirectory);
  app.footer(
      "Google Benchmark's flags pass through, e.g. --benchmark_filter=REGEX, "
      "--benchmark_min_time=SECONDS,\n--benchmark_repetitions=N, --benchmark_out=FILE "
      "--benchmark_out_format=json|csv|console,\n--benchmark_list_tests=true; see "
      "https://github.com/google/benchmark/blob/v1.7.1/docs/user_guide.md");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "bench_kernels: error: " << e.what() << " (see --help)\n";
    return 2;
  }
  options.backends_given = backends->count() > 0;
  try {
    check_sizes_countable(options.model, options.batch);
  } catch (const InputError& e) {
    std::cerr << "bench_kernels: error: " << e.what() << "\n";
    return 2;
  }
  std::vector<std::string> rest;
  for (const auto& arg : app.remaining()) {
    if (arg.rfind("--benchmark_", 0) != 0 && arg.rfind("--v=", 0) != 0) {
      std::cerr << "bench_kernels: error: unknown option '" << arg << "' (see --help)\n";
      return 2;
    }
    if (const std::string why = pass_through_problem(arg); !why.empty()) {
      std::cerr << "bench_kernels: error: " << why << "\n";
      return 2;
    }
    rest.push_back(arg);
  }
  return rest;
}

}  // namespace mlps::kernel_bench
