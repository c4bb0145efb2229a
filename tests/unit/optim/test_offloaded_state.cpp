// Optimizer state offloaded (--offload optimizer): the scratch file holds what is written and
// leaves nothing behind, the state streams chunk by chunk with every chunk written back, and an
// optimizer whose state is offloaded (to disk; from a GPU to host memory or disk) updates bit
// for bit as one whose state is in memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/base/errors.h"
#include "src/base/scratch_file.h"
#include "src/optim/offloaded_state.h"
#include "src/optim/optimizer.h"
#include "tests/cuda_test_support.h"

namespace mlps {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::string scratch_dir() {
  char pattern[] = "/tmp/mlps-offload-test.XXXXXX";
  const char* dir = ::mkdtemp(pattern);
  return dir ? dir : "/tmp";
}

TEST(ScratchFile, HoldsWhatIsWrittenAndIsRemovedWithItsObject) {
  const std::string dir = scratch_dir();
  std::string path;
  {
    ScratchFile file(dir, 3);
    path = file.path();
    EXPECT_NE(path.find("-rank3.offload"), std::string::npos) << path;
    EXPECT_EQ(file.grow(64), 0u);  // each growth rounded up to the alignment
    EXPECT_EQ(file.grow(32), kScratchAlignment);
    EXPECT_EQ(file.size(), 2 * kScratchAlignment);
    std::vector<double> out(4, 0), in = {1.5, -2, 3, 1e300};
    file.read(out.data(), 32, 64);  // reserved space reads as zeros
    EXPECT_EQ(out, std::vector<double>(4, 0));
    file.write(in.data(), 32, 64);
    file.read(out.data(), 32, 64);
    EXPECT_EQ(out, in);
    EXPECT_TRUE(exists(path));
  }
  EXPECT_FALSE(exists(path));
  ::rmdir(dir.c_str());
}

TEST(ScratchFile, RemoveScratchFilesEmptiesTheFolderBeforeTheObjectsGo) {
  const std::string dir = scratch_dir();
  ScratchFile a(dir, 0), b(dir, 1);
  a.grow(8);
  EXPECT_TRUE(exists(a.path()) && exists(b.path()));
  remove_scratch_files();  // as a signal's handler does
  EXPECT_FALSE(exists(a.path()) || exists(b.path()));
  EXPECT_EQ(::rmdir(dir.c_str()), 0);
}

TEST(ScratchFile, AFolderThatIsNotThereIsAnOutputErrorNamingIt) {
  try {
    ScratchFile file("/nonexistent-mlpscale-dir", 0);
    FAIL() << "created " << file.path();
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-mlpscale-dir/mlpscale-"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos);
  }
}

TEST(OffloadedState, StreamsEveryChunkAndKeepsWhatTheUpdateWrote) {
  const std::string dir = scratch_dir();
  {
    OffloadedState<float> state(dir, 0, /*chunk_elements=*/3);
    const std::vector<float> start = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const int first_tensor = state.add(4, {nullptr});
    const int tensor = state.add(10, {start.data(), nullptr});
    EXPECT_EQ(state.file_bytes(), 3 * kScratchAlignment);  // each array's bytes aligned
    EXPECT_FALSE(state.direct());  // chunks of 12 bytes cannot start on the alignment
    for (int round = 1; round <= 2; ++round) {
      std::vector<int64_t> firsts;
      state.stream(tensor, [&](int64_t first, int64_t count, float* const* arrays) {
        firsts.push_back(first);
        for (int64_t i = 0; i < count; ++i) {
          EXPECT_EQ(arrays[0][i], start[first + i] + static_cast<float>(round - 1));
          EXPECT_EQ(arrays[1][i], static_cast<float>(round - 1) * 2);
          arrays[0][i] += 1;
          arrays[1][i] += 2;
        }
      });
      EXPECT_EQ(firsts, (std::vector<int64_t>{0, 3, 6, 9}));
    }
    state.stream(first_tensor, [&](int64_t, int64_t count, float* const* arrays) {
      for (int64_t i = 0; i < count; ++i) EXPECT_EQ(arrays[0][i], 0.0f);  // untouched by the other
    });
    EXPECT_EQ(state.traffic().bytes_read, (2 * 2 * 10 + 4) * sizeof(float));
  }
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "the state's file was left in " << dir;
}

// The tests' tensor: its starting values, and three steps of its gradients.
template <typename T>
std::vector<T> starting_values(int64_t n) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(0.1 * static_cast<double>(i)));
  return v;
}

template <typename T>
void take_three_steps(Optimizer<T>& optimizer, Buffer<T>& grad, int64_t n) {
  for (int step = 0; step < 3; ++step) {
    std::vector<T> g(n);
    for (int64_t i = 0; i < n; ++i)
      g[i] = static_cast<T>(std::cos(0.37 * static_cast<double>(i) + step));
    grad.upload(g);
    EXPECT_TRUE(optimizer.step());
  }
}

// One tensor of n elements updated 3 times by Adam or SGD on `kind`, its state in memory
// (nullopt), in host memory (a GPU's, "") or in a scratch file in a folder.
template <typename T>
std::vector<T> trained(OptimizerKind kind, int64_t n, std::optional<std::string> offload,
                       DeviceKind on = DeviceKind::cpu) {
  Device device(on);
  OptimizerConfig config;
  config.kind = kind;
  Optimizer<T> optimizer(device, config, MPI_COMM_SELF);
  if (offload) optimizer.offload_state_to(*offload, 0);
  Buffer<T> value(device, n), grad(device, n);
  std::vector<T> v = starting_values<T>(n);
  value.upload(v);
  optimizer.add(value.data(), grad.data(), n);
  take_three_steps(optimizer, grad, n);
  const OffloadTraffic t = optimizer.offload_traffic();
  if (offload && on == DeviceKind::cuda) {  // every step: the gradients down, the values up
    EXPECT_EQ(t.bytes_down, 3.0 * n * sizeof(T));
    EXPECT_EQ(t.bytes_up, 3.0 * n * sizeof(T));
  }
  if (offload && !offload->empty()) {  // full-precision SGD on the CPU keeps no state to move
    EXPECT_EQ(t.bytes_written > 0, kind == OptimizerKind::adam || on == DeviceKind::cuda);
  }
  return value.download();
}

TEST(OffloadedState, AnOptimizerWithItsStateOnDiskUpdatesBitForBitAsInMemory) {
  const std::string dir = scratch_dir();
  // 1.5 M floats: more than one chunk of kOffloadChunkBytes.
  const int64_t n = 3 * kOffloadChunkBytes / 8;
  const std::nullopt_t memory = std::nullopt;
  EXPECT_EQ(trained<float>(OptimizerKind::adam, n, dir),
            trained<float>(OptimizerKind::adam, n, memory));
  EXPECT_EQ(trained<double>(OptimizerKind::adam, 1000, dir),
            trained<double>(OptimizerKind::adam, 1000, memory));
  EXPECT_EQ(trained<float>(OptimizerKind::sgd, 1000, dir),
            trained<float>(OptimizerKind::sgd, 1000, memory));
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a state file was left in " << dir;
}

// ZeRO-Offload on a GPU: the host updates the state with the CPU's kernel, the chunks'
// gradients and values copied on the copy stream. The CPU's and the GPU's Adam compute the same
// expression, so with contraction off (the emulated GPU's build) the values agree bit for bit.
// Where the file system allows it (ext4, xfs; not tmpfs), a state of whole 4 MiB chunks goes
// past the page cache, its padded last chunk included, and keeps its values.
TEST(OffloadedState, ADirectFileKeepsTheStateItsPaddedChunksMove) {
  const std::string dir = scratch_dir();
  {
    OffloadedState<float> state(dir, 0);
    if (!state.direct()) {
      const std::string why = "the file system of " + dir + " refuses O_DIRECT";
      ::rmdir(dir.c_str());
      GTEST_SKIP() << why;
    }
    const int64_t n = kOffloadChunkBytes / 4 + 1000;  // a whole chunk and a partial one
    std::vector<float> start(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) start[static_cast<size_t>(i)] = static_cast<float>(i);
    const int tensor = state.add(n, {start.data()});
    for (int round = 0; round < 2; ++round)
      state.stream(tensor, [&](int64_t first, int64_t count, float* const* arrays) {
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(arrays[0][i], static_cast<float>(first + i) + static_cast<float>(round));
          arrays[0][i] += 1.0f;
        }
      });
  }
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "the state's file was left in " << dir;
}

// "" when a and b are equal, else where they first differ.
template <typename T>
std::string first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + ", " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      size_t differ = 0;
      for (size_t j = i; j < a.size(); ++j) differ += a[j] != b[j];
      return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " against " +
             std::to_string(b[i]) + " (" + std::to_string(differ) + " of " +
             std::to_string(a.size()) + " differ)";
    }
  return "";
}

TEST(OffloadedState, AGpuOptimizerWithItsStateOnTheHostOrOnDiskUpdatesAsOnTheGpu) {
  MLPS_REQUIRE_GPU("adam_update, offloaded to the host");
  const std::string dir = scratch_dir();
  const int64_t n = 3 * kOffloadChunkBytes / 8;  // three chunks: both stagings, reused
  const std::nullopt_t memory = std::nullopt;
  const auto on_gpu = trained<float>(OptimizerKind::adam, n, memory, DeviceKind::cuda);
  for (const std::string& to : {std::string(), dir})  // host memory, then disk
    EXPECT_EQ(first_difference(trained<float>(OptimizerKind::adam, n, to, DeviceKind::cuda),
                               on_gpu),
              "")
        << (to.empty() ? "host" : "disk");
  EXPECT_EQ(first_difference(trained<double>(OptimizerKind::sgd, 1000, "", DeviceKind::cuda),
                             trained<double>(OptimizerKind::sgd, 1000, memory, DeviceKind::cuda)),
            "");
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a state file was left in " << dir;
}

// ZeRO-3's parameter shard off the device (--offload optimizer+params): a unit's values read
// whole and written a chunk at a time, in host memory and in a file (direct where the file
// system allows it: whole chunks and a padded last one), and typed 16-bit values.
TEST(OffloadedState, ValuesAreReadWholeAndWrittenAChunkAtATime) {
  const std::string dir = scratch_dir();
  // bf16 has no ==: its bits compared.
  const auto bits = [](const bf16* values, int64_t n) {
    std::vector<uint16_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[i] = values[i].bits;
    return out;
  };
  for (const std::string& to : {std::string(), dir}) {
    const int64_t chunk = kOffloadChunkBytes / 4;  // the optimizer's, for fp32 state
    OffloadedState<bf16> values(to, 0, chunk, "params");
    const int64_t n = chunk + 1000;
    std::vector<bf16> start(static_cast<size_t>(n)), other(10, from_float<bf16>(-1.0f));
    for (int64_t i = 0; i < n; ++i) start[i] = from_float<bf16>(static_cast<float>(i % 256));
    const int first = values.add(10, {other.data()});
    const int tensor = values.add(n, {start.data()});
    EXPECT_EQ(bits(values.read(tensor), n), bits(start.data(), n));
    std::vector<bf16> updated(start);
    for (int64_t at = 0; at < n; at += chunk) {
      const int64_t count = std::min(chunk, n - at);
      for (int64_t i = at; i < at + count; ++i) updated[i] = from_float<bf16>(0.5f * i);
      values.write(tensor, at, count, updated.data() + at);
    }
    EXPECT_EQ(bits(values.read(tensor), n), bits(updated.data(), n))
        << (to.empty() ? "host" : "disk");
    EXPECT_EQ(bits(values.read(first), 10), bits(other.data(), 10));
    EXPECT_THROW(values.write(tensor, 7, 1, updated.data()), std::logic_error);  // not a chunk
  }
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "the values' file was left in " << dir;
}

// The optimizer of a tensor whose values live off the device (add_offloaded_values): each
// updated chunk handed out equals the tensor updated in memory, on the CPU (state on disk) and
// on a GPU (state in host memory or on disk, against the GPU's own update).
template <typename T>
std::vector<T> trained_off_device(int64_t n, const std::string& dir, DeviceKind on) {
  Device device(on);
  Optimizer<T> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  optimizer.offload_state_to(dir, 0, true);
  Buffer<T> grad(device, n);
  std::vector<T> v = starting_values<T>(n);
  optimizer.add_offloaded_values(grad.data(), n, v.data(),
                                 [&](int64_t first, int64_t count, const T* values) {
                                   std::copy(values, values + count, v.begin() + first);
                                 });
  take_three_steps(optimizer, grad, n);
  return v;
}

TEST(OffloadedState, AnOptimizerOfValuesOffDeviceUpdatesThemAsInMemory) {
  const std::string dir = scratch_dir();
  const int64_t n = 3 * kOffloadChunkBytes / 8;
  EXPECT_EQ(first_difference(trained_off_device<float>(n, dir, DeviceKind::cpu),
                             trained<float>(OptimizerKind::adam, n, std::nullopt)),
            "");
  EXPECT_EQ(first_difference(trained_off_device<double>(1000, dir, DeviceKind::cpu),
                             trained<double>(OptimizerKind::adam, 1000, std::nullopt)),
            "");
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a file was left in " << dir;
}

TEST(OffloadedState, AGpuOptimizerOfValuesOffDeviceUpdatesThemAsOnTheGpu) {
  MLPS_REQUIRE_GPU("adam_update, values offloaded to the host");
  const std::string dir = scratch_dir();
  const int64_t n = 3 * kOffloadChunkBytes / 8;
  const auto on_gpu = trained<float>(OptimizerKind::adam, n, std::nullopt, DeviceKind::cuda);
  for (const std::string& to : {std::string(), dir})
    EXPECT_EQ(first_difference(trained_off_device<float>(n, to, DeviceKind::cuda), on_gpu), "")
        << (to.empty() ? "host" : "disk");
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a file was left in " << dir;
}

TEST(OffloadedState, TheCpuBackendHasNoHostTierToOffloadTo) {
  Device device(DeviceKind::cpu);
  Optimizer<float> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  EXPECT_THROW(optimizer.offload_state_to("", 0), std::logic_error);
}

}  // namespace
}  // namespace mlps
