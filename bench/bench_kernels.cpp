// Kernel micro-benchmarks (Google Benchmark): every distinct GEMM shape of one training step plus
// one large square GEMM, the element-wise kernels at the model's sizes, and a device-to-device
// copy as the memory-bandwidth ceiling; on each available backend, in f32 and f64 (the GEMMs also
// in bf16, and in tf32 on the GPU); and the data loader's samples on one host thread; and the
// CPU's one-core FMA peak, which every f32/f64 CPU GEMM is also reported against ("% of peak":
// its rate over that peak times the threads it ran on).
// No MPI here.
// The pieces live in bench/support: the options, the GEMM and the element-wise registrations.
#include <benchmark/benchmark.h>

#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "bench/support/elementwise_benchmarks.h"
#include "bench/support/fma_peak.h"
#include "bench/support/gemm_benchmarks.h"
#include "src/base/errors.h"
#include "bench/support/offload_benchmarks.h"
#include "bench/support/sample_load_benchmark.h"
#include "bench/support/weight_restream_benchmarks.h"
#include "bench/support/weight_update_benchmarks.h"
#include "bench/support/kernel_bench_memory.h"
#include "bench/support/kernel_bench_options.h"
#include "bench/support/kernel_bench_registry.h"
#include "kernels/cpu/blas_core.h"
#include "src/device/device.h"
#include "src/base/human_bytes.h"
#include "src/memory/available_memory.h"
#include "src/memory/memory_need.h"
#include "src/model/model_config.h"

namespace mlps::kernel_bench {
namespace {

// Registration order is listing order: per backend, f32 then f64, GEMMs then element-wise, then
// bf16 GEMMs and (GPU) tf32 GEMMs.
template <typename T>
void register_all(Backend backend, const KernelBenchOptions& options) {
  // The CPU's peak for the threads its GEMMs run on (every core is taken to reach one's peak).
  const double peak = backend.device.kind() == DeviceKind::cpu
                          ? measure_fma_peak<T>().flops_per_second * cpu::thread_count()
                          : 0.0;
  register_gemm_benchmarks<T>(backend, options, peak);
  register_elementwise_benchmarks<T>(backend, options);
  register_weight_update_benchmarks<T>(backend, options);
  register_weight_restream_benchmarks<T>(backend, options);
}

// Why the cuda backend cannot run here, or "" when it can.
std::string cuda_unavailable_reason() {
#ifdef MLPSCALE_WITH_CUDA
  return cuda::gpu_available() ? "" : "no usable GPU is visible to this process";
#else
  return "this build has no CUDA backend (rebuild with CUDA=1)";
#endif
}

// Empty when the largest benchmark's inputs fit on every backend to run, else why not.
std::string memory_problem(const KernelBenchOptions& options, const std::vector<DeviceKind>& kinds) {
  for (DeviceKind kind : kinds) {
    const double need = largest_benchmark_bytes(options, square_gemm_size(kind));
    const AvailableMemory have = available_memory_per_rank(kind, RankPlacement{});
    if (have.bytes > 0 && need > have.bytes)
      return std::string(to_string(kind)) + ": the largest benchmark needs about " +
             human_bytes(need) + " (its fp64 inputs) but there is " + human_bytes(have.bytes) +
             " " + have.where + "; use a smaller --hidden, --ffn-mult, --image-size or --batch";
  }
  return "";
}

int run(int argc, char** argv) {
  KernelBenchOptions options;
  auto parsed = parse_kernel_bench_options(argc, argv, options);
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

  if (const std::string problem = memory_problem(options, kinds); !problem.empty()) {
    std::cerr << "bench_kernels: " << problem << "\n";
    return 2;
  }

  const ModelConfig& m = options.model;
  benchmark::AddCustomContext(
      "mlpscale_model", "image_size " + std::to_string(m.image_size) + ", hidden " +
                            std::to_string(m.hidden) + ", layers " + std::to_string(m.layers) +
                            ", ffn_hidden " + std::to_string(m.ffn_hidden()) + ", batch " +
                            std::to_string(options.batch));
  // What a CPU GEMM or copy ran on: bin/plan --calibrate scales them to the whole node.
  benchmark::AddCustomContext("mlpscale_cpu_threads", std::to_string(cpu::thread_count()));
  // Which kernels every CPU rate comes from (kernels/cpu/blas_core.h).
  const cpu::BlasInfo blas = cpu::blas_info();
  benchmark::AddCustomContext("mlpscale_blas", blas.summary());
  benchmark::AddCustomContext("mlpscale_blas_core", blas.core);
  benchmark::AddCustomContext("mlpscale_cpu", blas.processor_line());
  if (!blas.notice.empty()) {
    benchmark::AddCustomContext("mlpscale_blas_notice", blas.notice);
    std::cerr << "bench_kernels: notice: " << blas.notice << "\n";
  }
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
    // The GEMMs of typed bf16 (cublasGemmEx on the GPU, widen-then-sgemm on the CPU) and, on
    // the GPU, fp32 GEMMs on TF32 tensor cores (--math tf32): what the planner's bf16 and tf32
    // rates stand for.
    register_gemm_benchmarks<bf16>(backend, options, 0.0);
    if (kind == DeviceKind::cuda) {
      register_host_offload_benchmarks(*devices.back());
      devices.push_back(std::make_unique<Device>(
          DeviceConfig(kind, StorageFormat::full, false, GemmCompute::tf32)));
      register_gemm_benchmarks<float>({*devices.back(), cache}, options, 0.0, "tf32");
    }
  }
  if (!kinds.empty() && kinds.front() == DeviceKind::cpu) register_fma_peak_benchmarks();
  register_sample_load_benchmark(options);  // host work: once, whatever the backends
  register_offload_benchmarks(options);
  benchmark::RunSpecifiedBenchmarks();
  cache.clear();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace mlps::kernel_bench

int main(int argc, char** argv) {
  mlps::cpu::choose_blas_core(argv);  // before the first GEMM: the processor's own kernels
  try {
    return mlps::kernel_bench::run(argc, argv);
  } catch (const mlps::InputError& e) {
    std::cerr << "bench_kernels: error: " << e.what() << "\n";
    return 2;
  } catch (const mlps::OutputError& e) {
    std::cerr << "bench_kernels: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "bench_kernels: fatal: " << e.what() << "\n";
    return 1;
  }
}
