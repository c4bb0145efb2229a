#include "bench/support/offload_benchmarks.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "src/base/scratch_file.h"
#include "src/device/buffer.h"
#include "src/optim/offloaded_state.h"
#include "src/optim/optimizer.h"

namespace mlps::kernel_bench {
namespace {

// 64 MiB an array: sixteen chunks, beyond the caches.
constexpr int64_t kMegabytes = 64;
constexpr int64_t kElements = kMegabytes * 1024 * 1024 / static_cast<int64_t>(sizeof(float));

// Which path the file's bytes took, for the row's label.
const char* file_path_label(bool direct) { return direct ? "O_DIRECT" : "page cache"; }

void file_transfer(benchmark::State& state, const std::string& dir, bool write) {
  ScratchFile file(dir, 0, /*direct=*/true);  // as a run's file
  const auto bytes = static_cast<uint64_t>(kElements) * sizeof(float);
  file.grow(bytes);
  const auto piece = static_cast<uint64_t>(kOffloadChunkBytes);
  ScratchBuffer chunk(piece);
  for (uint64_t at = 0; at < bytes; at += piece) file.write(chunk.data(), piece, at);
  for (auto _ : state)
    for (uint64_t at = 0; at < bytes; at += piece) {
      if (write) file.write(chunk.data(), piece, at);
      else file.read(chunk.data(), piece, at);
      benchmark::DoNotOptimize(chunk.data());
    }
  state.SetLabel(file_path_label(file.direct()));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void adam_stream(benchmark::State& state, const std::string& dir) {
  Device device(DeviceKind::cpu);
  OffloadedState<float> offloaded(dir, 0);
  const int tensor = offloaded.add(kElements, {nullptr, nullptr});
  Buffer<float> value(device, kElements), grad(device, kElements);
  value.upload(std::vector<float>(static_cast<size_t>(kElements), 0.5f));
  grad.upload(std::vector<float>(static_cast<size_t>(kElements), 0.01f));
  const AdamStep step{1e-3, 0.9, 0.999, 1e-8, 0.1, 0.001, 1.0};
  const auto update = [&](int64_t first, int64_t count, float* const* arrays) {
    device.adam_update<float>(value.data() + first, grad.data() + first, arrays[0], arrays[1],
                              count, step, GradAfterUpdate::kept);
  };
  // Once untimed: a run's file has been written by its first update before the steps it times
  // (the first writes of a fresh file also allocate its pages, as only a run's first step does).
  offloaded.stream(tensor, update);
  for (auto _ : state) offloaded.stream(tensor, update);
  state.SetLabel(file_path_label(offloaded.direct()));
  // Both moments read and written each step.
  state.counters["GB/s"] =
      benchmark::Counter(4.0 * static_cast<double>(kElements) * sizeof(float) / 1e9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

// 64 MiB between the host and the GPU, one way, from or into pinned (HostBuffer) or pageable
// (std::vector) host memory; the pinned copies queued, then waited for once, as a run's are.
void host_device_copy(benchmark::State& state, Device& device, bool up, bool pinned) {
  const auto bytes = static_cast<size_t>(kElements) * sizeof(float);
  Buffer<float> on_device(device, kElements);
  HostBuffer<float> staging(device, pinned ? kElements : 0);
  std::vector<float> pageable(pinned ? 0 : static_cast<size_t>(kElements), 1.0f);
  if (pinned) std::fill(staging.data(), staging.data() + kElements, 1.0f);
  for (auto _ : state) {
    if (pinned && up) staging.upload(on_device.data(), 0, kElements);
    if (pinned && !up) staging.download(on_device.data(), 0, kElements);
    if (!pinned && up) device.to_device(on_device.data(), pageable.data(), bytes);
    if (!pinned && !up) device.to_host(pageable.data(), on_device.data(), bytes);
    device.synchronize();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// A GPU's update with its Adam state in host memory (--offload-to host), as a run's: each chunk's
// gradients down, the CPU's update, its values up, overlapped (DeviceExchange). The rate is the
// bytes crossing the link (4 down and 4 up per element) over the update's time.
void host_offloaded_adam(benchmark::State& state, Device& device) {
  Optimizer<float> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  optimizer.offload_state_to("", 0);
  Buffer<float> value(device, kElements), grad(device, kElements);
  value.upload(std::vector<float>(static_cast<size_t>(kElements), 0.5f));
  grad.upload(std::vector<float>(static_cast<size_t>(kElements), 0.01f));
  optimizer.add(value.data(), grad.data(), kElements);
  optimizer.step();  // once untimed: the host state's pages touched, as after a run's first step
  device.synchronize();
  for (auto _ : state) {
    optimizer.step();
    device.synchronize();
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * static_cast<double>(kElements) * sizeof(float) / 1e9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

void register_host_offload_benchmarks(Device& device) {
  if (device.kind() != DeviceKind::cuda) return;
  const std::string size = "/cuda/f32/mb:" + std::to_string(kMegabytes);
  for (const bool pinned : {true, false})
    for (const bool up : {true, false}) {
      const std::string name = std::string(up ? "copy_to_device" : "copy_to_host") + "/cuda/" +
                               (pinned ? "pinned" : "pageable") + "/mb:" +
                               std::to_string(kMegabytes);
      benchmark::RegisterBenchmark(name.c_str(), [&device, up, pinned](benchmark::State& s) {
        host_device_copy(s, device, up, pinned);
      })->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  benchmark::RegisterBenchmark(("offload_adam/host" + size).c_str(),
                               [&device](benchmark::State& s) { host_offloaded_adam(s, device); })
      ->Unit(benchmark::kMillisecond)->UseRealTime();
}

void register_offload_benchmarks(const KernelBenchOptions& options) {
  if (options.offload_dir.empty()) return;
  const std::string dir = options.offload_dir;
  const std::string size = "/disk/f32/mb:" + std::to_string(kMegabytes);
  benchmark::RegisterBenchmark(("offload_write" + size).c_str(),
                               [dir](benchmark::State& s) { file_transfer(s, dir, true); })
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark(("offload_read" + size).c_str(),
                               [dir](benchmark::State& s) { file_transfer(s, dir, false); })
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark(("offload_adam" + size).c_str(),
                               [dir](benchmark::State& s) { adam_stream(s, dir); })
      ->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace mlps::kernel_bench
