// Kernel micro-benchmarks (Google Benchmark): every distinct GEMM shape of one training step plus
// one large square GEMM, the element-wise kernels at the model's sizes, and a device-to-device
// copy as the memory-bandwidth ceiling; on each available backend, in f32 and f64. No MPI here.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "src/buffer.h"
#include "src/device.h"
#include "src/model_config.h"

namespace mlps {
namespace {

struct BenchOptions {
  ModelConfig model;
  int64_t batch = 32;
  std::vector<std::string> backends{"cpu", "cuda"};
  bool backends_given = false;
};

template <typename T>
const char* type_name();
template <>
const char* type_name<float>() { return "f32"; }
template <>
const char* type_name<double>() { return "f64"; }

// Random values of magnitude in [0.1, 1] (never zero), of random sign unless `positive`.
template <typename T>
std::vector<T> random_values(int64_t count, uint64_t seed, bool positive) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.1, 1.0);
  std::vector<T> values(static_cast<size_t>(count));
  for (auto& v : values) {
    const double x = magnitude(rng);
    v = static_cast<T>(positive || (rng() & 1) ? x : -x);
  }
  return values;
}

// One input or output tensor of a benchmark; `positive` for those that must be (Adam's v, rstd).
struct TensorSpec {
  TensorSpec(int64_t count, bool positive = false) : count(count), positive(positive) {}
  int64_t count;
  bool positive;
};

// The memory one benchmark works on: random tensors in spec order, plus class labels.
template <typename T>
struct Tensors {
  std::vector<Buffer<T>> tensors;
  Buffer<int32_t> labels;
  T* operator[](size_t i) { return tensors[i].data(); }
};

template <typename T>
std::shared_ptr<Tensors<T>> make_tensors(Device& device, const std::vector<TensorSpec>& specs,
                                         int64_t label_count, int64_t classes) {
  auto t = std::make_shared<Tensors<T>>();
  uint64_t seed = 1;
  for (const auto& spec : specs) {
    t->tensors.emplace_back(device, spec.count);
    t->tensors.back().upload(random_values<T>(spec.count, seed++, spec.positive));
  }
  if (label_count > 0) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
    std::vector<int32_t> host(static_cast<size_t>(label_count));
    for (auto& l : host) l = label(rng);
    t->labels = Buffer<int32_t>(device, label_count);
    t->labels.upload(host);
  }
  return t;
}

// The inputs of the benchmark that ran last. Google Benchmark calls a benchmark several times
// while it settles the iteration count; building inputs (random fill, upload) once per benchmark
// keeps the run short, and dropping the previous benchmark's inputs keeps one set in memory.
class InputCache {
 public:
  // Returns the inputs for `key` and whether they were just made.
  template <typename Inputs, typename Make>
  std::pair<Inputs&, bool> get(const std::string& key, Make&& make) {
    const bool fresh = key != key_;
    if (fresh) {
      clear();  // free first: two benchmarks' inputs need not fit at once
      inputs_ = make();
      key_ = key;
    }
    return {*static_cast<Inputs*>(inputs_.get()), fresh};
  }
  void clear() {
    inputs_.reset();
    key_.clear();
  }

 private:
  std::string key_;
  std::shared_ptr<void> inputs_;
};

#ifdef MLPSCALE_WITH_CUDA
// Start/stop events on the kernel stream, destroyed even when a kernel throws.
struct EventPair {
  void* start = cuda::event_create();
  void* stop = cuda::event_create();
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cuda::event_destroy(start);
    cuda::event_destroy(stop);
  }
};
#endif

// The timed loop; returns the seconds the kernel calls took in total, measured apart from Google
// Benchmark's clocks: CUDA events around each call on the GPU (elapsed waits for the kernel, so
// launch and synchronisation overheads stay out), a steady clock around call + synchronize on the
// CPU (wall time, which also covers the work of OpenBLAS's other threads).
template <typename Kernel>
double time_kernel(benchmark::State& state, const Device& device, Kernel&& kernel) {
  double total_seconds = 0;
#ifdef MLPSCALE_WITH_CUDA
  if (device.kind() == DeviceKind::cuda) {
    EventPair events;
    for (auto _ : state) {
      cuda::event_record(events.start);
      kernel();
      cuda::event_record(events.stop);
      total_seconds += cuda::event_elapsed_seconds(events.start, events.stop);
    }
    return total_seconds;
  }
#endif
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    kernel();
    device.synchronize();
    total_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return total_seconds;
}

// One benchmark's recipe: what to allocate, what to call, and its rate counter.
template <typename T>
struct KernelBench {
  std::string name;
  std::vector<TensorSpec> tensors;
  int64_t label_count = 0;
  int64_t classes = 0;
  std::function<void(const Device&, Tensors<T>&)> call;
  const char* counter = "GB/s";  // "TFLOP/s" for GEMMs
  double counter_units = 0;      // per call, in 1e9 bytes or 1e12 flops
  benchmark::TimeUnit unit = benchmark::kMicrosecond;
  std::string label;
};

struct Backend {
  Device& device;
  InputCache& cache;
};

// Rate counters are set from time_kernel's total and the iteration count, so that they are plain
// per-second values in the counter's units (a kIsRate counter would print a second "/s").
// No MinTime()/UseManualTime() here: Google Benchmark would append "/min_time:.../manual_time"
// to every name; the default minimum time is a flag instead (see run()). The iteration count is
// then settled on the main thread's CPU time, which tracks wall time here: it takes part in
// OpenBLAS's GEMMs, and CUDA spins while waiting for an event in a one-context process.
template <typename T>
void register_bench(Backend backend, KernelBench<T> bench) {
  auto fn = [backend, bench](benchmark::State& state) {
    auto [inputs, fresh] = backend.cache.get<Tensors<T>>(bench.name, [&] {
      return make_tensors<T>(backend.device, bench.tensors, bench.label_count, bench.classes);
    });
    auto call = [&] { bench.call(backend.device, inputs); };
    if (fresh) {  // warm-up: first-call costs (cuBLAS handles, page faults) stay out of timing
      call();
      backend.device.synchronize();
    }
    const double seconds = time_kernel(state, backend.device, call);
    state.counters[bench.counter] =
        seconds > 0 ? bench.counter_units * static_cast<double>(state.iterations()) / seconds : 0.0;
    if (!bench.label.empty()) state.SetLabel(bench.label);
  };
  benchmark::RegisterBenchmark(bench.name.c_str(), fn)->Unit(bench.unit);
}

std::string prefix(const char* kernel, const Device& device, const char* type) {
  return std::string(kernel) + "/" + to_string(device.kind()) + "/" + type + "/";
}
std::string rows_cols(int64_t rows, int64_t cols) {
  return "rows:" + std::to_string(rows) + "/cols:" + std::to_string(cols);
}
std::string count(int64_t n) { return "n:" + std::to_string(n); }

template <typename T>
void register_gemm(Backend backend, const GemmShape& s, const std::string& label) {
  const int64_t lda = s.trans_a ? s.m : s.k;  // A is stored k×m when transposed, else m×k
  const int64_t ldb = s.trans_b ? s.k : s.n;  // B is stored n×k when transposed, else k×n
  std::string name = prefix("gemm", backend.device, type_name<T>());
  name += s.trans_a ? 'T' : 'N';
  name += s.trans_b ? 'T' : 'N';
  name += "/m:" + std::to_string(s.m) + "/n:" + std::to_string(s.n) + "/k:" + std::to_string(s.k);
  KernelBench<T> b;
  b.name = name;
  b.tensors = {{s.m * s.k}, {s.k * s.n}, {s.m * s.n}};
  b.call = [s, lda, ldb](const Device& d, Tensors<T>& t) {
    d.gemm<T>(s.trans_a, s.trans_b, s.m, s.n, s.k, T(1), t[0], lda, t[1], ldb, T(0), t[2], s.n);
  };
  b.counter = "TFLOP/s";
  b.counter_units = s.flops() / 1e12;
  b.unit = benchmark::kMillisecond;
  b.label = label;
  register_bench<T>(backend, std::move(b));
}

// Every distinct GEMM shape of one training step (labelled with how often a step runs it and the
// first layer that does), then one large square GEMM as the backend's compute ceiling.
template <typename T>
void register_gemms(Backend backend, const BenchOptions& options) {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t>;
  std::vector<std::pair<GemmShape, int>> distinct;
  for (const auto& s : training_step_gemms(options.model, options.batch)) {
    bool seen = false;
    for (auto& [shape, uses] : distinct) {
      if (Key{shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k} ==
          Key{s.trans_a, s.trans_b, s.m, s.n, s.k}) {
        ++uses;
        seen = true;
        break;
      }
    }
    if (!seen) distinct.push_back({s, 1});
  }
  const int64_t square = backend.device.kind() == DeviceKind::cuda ? 4096 : 2048;
  const GemmShape big{"square", false, false, square, square, square};
  bool big_is_model_shape = false;
  for (const auto& [s, uses] : distinct) {
    register_gemm<T>(backend, s, std::to_string(uses) + "x per step, e.g. " + s.name);
    big_is_model_shape |= !s.trans_a && !s.trans_b && s.m == square && s.n == square && s.k == square;
  }
  if (!big_is_model_shape) register_gemm<T>(backend, big, "square");
}

// Element-wise kernels at the sizes the model runs them; each GB/s counter counts every input
// read once and every output written once (the comment at each kernel lists them).
template <typename T>
void register_elementwise(Backend backend, const BenchOptions& options) {
  using Call = std::function<void(const Device&, Tensors<T>&)>;
  const char* type = type_name<T>();
  const double size = sizeof(T);
  const int64_t rows = options.batch;
  const int64_t ffn = options.model.ffn_hidden();
  const int64_t hidden = options.model.hidden;
  const int64_t classes = options.model.classes;
  // `labels`: the benchmark also gets `rows` class labels in [0, classes).
  auto add = [&](const char* kernel, const std::string& shape, std::vector<TensorSpec> tensors,
                 double bytes, Call call, bool labels = false) {
    KernelBench<T> b;
    b.name = prefix(kernel, backend.device, type) + shape;
    b.tensors = std::move(tensors);
    b.label_count = labels ? rows : 0;
    b.classes = classes;
    b.call = std::move(call);
    b.counter_units = bytes / 1e9;
    register_bench<T>(backend, std::move(b));
  };

  {  // on fc1's output
    const int64_t r = rows, c = ffn;
    // read y, bias; write y
    add("bias_add", rows_cols(r, c), {r * c, c}, (2.0 * r * c + c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_add<T>(t[0], t[1], r, c); });
    // read dy; write dbias
    add("bias_grad", rows_cols(r, c), {c, r * c}, (1.0 * r * c + c) * size,
        [r, c](const Device& d, Tensors<T>& t) { d.bias_grad<T>(t[0], t[1], r, c, false); });
  }
  {  // the ReLU between fc1 and fc2
    const int64_t n = rows * ffn;
    // read x; write y
    add("relu_forward", count(n), {n, n}, 2.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_forward<T>(t[0], t[1], n); });
    // read dy, y; write dx
    add("relu_backward", count(n), {n, n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.relu_backward<T>(t[0], t[1], t[2], n); });
  }
  {  // the block's residual, on hidden-wide activations: read a, b; write y
    const int64_t n = rows * hidden;
    add("residual_add", count(n), {n, n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.residual_add<T>(t[0], t[1], t[2], n); });
  }
  {  // LayerNorm(hidden)
    const int64_t r = rows, c = hidden;
    // read x, gamma, beta; write y, mean, rstd
    add("layernorm_forward", rows_cols(r, c), {r * c, r, r, r * c, c, c},
        (2.0 * r * c + 2.0 * c + 2.0 * r) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_forward<T>(t[0], t[1], t[2], t[3], t[4], t[5], r, c, 1e-5);
        });
    // read dy, x, mean, rstd, gamma; write dx, dgamma, dbeta
    add("layernorm_backward", rows_cols(r, c), {r * c, c, c, r * c, r * c, r, {r, true}, c},
        (3.0 * r * c + 2.0 * r + 3.0 * c) * size, [r, c](const Device& d, Tensors<T>& t) {
          d.layernorm_backward<T>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], r, c, false);
        });
  }
  {  // the classifier's loss
    const int64_t r = rows, c = classes;
    // read logits, labels (int32); write probs, row_loss
    add("softmax_xent_forward", rows_cols(r, c), {r * c, r, r * c},
        (2.0 * r * c + r) * size + 4.0 * r,
        [r, c](const Device& d, Tensors<T>& t) {
          d.softmax_xent_forward<T>(t[0], t[1], t[2], t.labels.data(), r, c);
        },
        true);
    // read probs, labels (int32); write dlogits
    add("softmax_xent_backward", rows_cols(r, c), {r * c, {r * c, true}},
        2.0 * r * c * size + 4.0 * r,
        [r, c](const Device& d, Tensors<T>& t) {
          d.softmax_xent_backward<T>(t[0], t[1], t.labels.data(), r, c, 1.0 / r);
        },
        true);
  }
  {  // the optimizers on the largest weight (fc1's, 16M elements, at the tutorial's config);
     // bin/bench_floor looks this size up to rate the whole step's update
    int64_t n = 0;
    for (const auto& s : linear_shapes(options.model)) n = std::max(n, s.in * s.out);
    AdamStep step;
    step.bias_correction1 = 1.0 - 0.9;  // t = 1 (the values do not change the work)
    step.bias_correction2 = 1.0 - 0.999;
    // read p, g, m, v; write p, m, v
    add("adam_update", count(n), {n, n, n, {n, true}}, 7.0 * n * size,
        [n, step](const Device& d, Tensors<T>& t) {
          d.adam_update<T>(t[0], t[1], t[2], t[3], n, step);
        });
    // read p, g; write p
    add("sgd_update", count(n), {n, n}, 3.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.sgd_update<T>(t[0], t[1], n, 1e-3); });
  }
  {  // the memory-bandwidth ceiling: 256 MiB, well past any cache; read src, write dst
    const int64_t n = (int64_t{256} << 20) / static_cast<int64_t>(sizeof(T));
    add("copy", count(n), {n, n}, 2.0 * n * size,
        [n](const Device& d, Tensors<T>& t) { d.copy(t[0], t[1], n * sizeof(T)); });
  }
}

template <typename T>
void register_all(Backend backend, const BenchOptions& options) {
  register_gemms<T>(backend, options);
  register_elementwise<T>(backend, options);
}

// Why the cuda backend cannot run here, or "" when it can.
std::string cuda_unavailable_reason() {
#ifdef MLPSCALE_WITH_CUDA
  return cuda::gpu_available() ? "" : "no usable GPU is visible to this process";
#else
  return "this build has no CUDA backend (rebuild with CUDA=1)";
#endif
}

// Parses our own options; returns the arguments left for Google Benchmark, or an exit code.
// An argument that is neither ours nor a --benchmark_* flag is an error.
std::variant<std::vector<std::string>, int> parse_options(int argc, char** argv,
                                                           BenchOptions& options) {
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
      ->check(positive)->capture_default_str();
  app.add_option("--ffn-mult", options.model.ffn_mult, "FFN width as a multiple of H")
      ->check(positive)->capture_default_str();
  app.add_option("--batch", options.batch, "rows of every activation (the global batch)")
      ->check(positive)->capture_default_str();
  auto* backends = app.add_option("--backends", options.backends, "backends to benchmark")
                       ->delimiter(',')
                       ->check(CLI::IsMember({"cpu", "cuda"}))
                       ->capture_default_str();
  app.footer(
      "Google Benchmark's flags pass through, e.g. --benchmark_filter=REGEX, "
      "--benchmark_min_time=SECONDS,\n--benchmark_repetitions=N, --benchmark_out=FILE "
      "--benchmark_out_format=json|csv|console,\n--benchmark_list_tests=true; see "
      "https://github.com/google/benchmark/blob/v1.7.1/docs/user_guide.md");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "bench_kernels: " << e.what() << " (see --help)\n";
    return 2;
  }
  options.backends_given = backends->count() > 0;
  std::vector<std::string> rest;
  for (const auto& arg : app.remaining()) {
    if (arg.rfind("--benchmark_", 0) != 0 && arg.rfind("--v=", 0) != 0) {
      std::cerr << "bench_kernels: unknown option '" << arg << "' (see --help)\n";
      return 2;
    }
    rest.push_back(arg);
  }
  return rest;
}

int run(int argc, char** argv) {
  BenchOptions options;
  auto parsed = parse_options(argc, argv, options);
  if (const int* code = std::get_if<int>(&parsed)) return *code;

  // Google Benchmark parses its flags from an argv of its own: argv[0], a short default minimum
  // time (the whole default run takes about a minute on 2 cores), then the pass-through flags,
  // which override it since the last occurrence of a flag wins.
  std::vector<std::string> bench_args{argv[0], "--benchmark_min_time=0.2"};
  for (auto& arg : std::get<std::vector<std::string>>(parsed)) bench_args.push_back(arg);
  std::vector<char*> bench_argv;
  for (auto& arg : bench_args) bench_argv.push_back(arg.data());
  int bench_argc = static_cast<int>(bench_argv.size());
  benchmark::Initialize(&bench_argc, bench_argv.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, bench_argv.data())) return 2;

  const std::set<std::string> wanted(options.backends.begin(), options.backends.end());
  std::vector<DeviceKind> kinds;
  if (wanted.count("cpu")) kinds.push_back(DeviceKind::cpu);
  if (wanted.count("cuda")) {
    const std::string why = cuda_unavailable_reason();
    if (why.empty()) {
      kinds.push_back(DeviceKind::cuda);
    } else if (options.backends_given) {
      std::cerr << "bench_kernels: --backends cuda: cuda is not available (" << why << ")\n";
      return 2;
    } else {
      std::cerr << "cuda: not available (" << why << "), GPU benchmarks skipped\n";
    }
  }

  const ModelConfig& m = options.model;
  benchmark::AddCustomContext(
      "mlpscale_model", "image_size " + std::to_string(m.image_size) + ", hidden " +
                            std::to_string(m.hidden) + ", layers " + std::to_string(m.layers) +
                            ", ffn_mult " + std::to_string(m.ffn_mult) + ", batch " +
                            std::to_string(options.batch));
#ifdef MLPSCALE_WITH_CUDA
  if (!kinds.empty() && kinds.back() == DeviceKind::cuda)
    benchmark::AddCustomContext("mlpscale_cuda", cuda::runtime_version_string());
#endif

  // The cache holds Buffers on these devices, so it is declared after them and cleared first.
  std::vector<std::unique_ptr<Device>> devices;
  InputCache cache;
  for (DeviceKind kind : kinds) {
    devices.push_back(std::make_unique<Device>(kind));
    const Backend backend{*devices.back(), cache};
    register_all<float>(backend, options);
    register_all<double>(backend, options);
  }
  benchmark::RunSpecifiedBenchmarks();
  cache.clear();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  try {
    return mlps::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_kernels: " << e.what() << "\n";
    return 1;
  }
}
