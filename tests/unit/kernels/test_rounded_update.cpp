// Mixed precision's one-pass optimizer update (adam_update_rounded, sgd_update_rounded): on the
// CPU bit for bit the update, a copy and round_to_storage, across the blocks it walks and with
// loss scaling and gradient zeroing; on the GPU the rounded copy is exactly the rounded master.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"
#include "tests/half_values.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

struct State {
  std::vector<float> master, value, grad, m, v;
};

// 5000 elements: several of the CPU's 2048-element blocks and a partial one.
State random_state(uint64_t seed, int64_t n = 5000) {
  State s;
  s.master = ref::cast_to<float>(ref::random_values(n, seed));
  s.value = std::vector<float>(static_cast<size_t>(n), -7.0f);
  s.grad = ref::cast_to<float>(ref::random_values(n, seed + 1));
  s.m = ref::cast_to<float>(ref::random_values(n, seed + 2, -0.1, 0.1));
  s.v = ref::cast_to<float>(ref::random_values(n, seed + 3, 0.0, 0.01));
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

AdamStep adam_step(double grad_scale) {
  AdamStep step;
  step.lr = 0.05;
  step.bias_correction1 = 1.0 - 0.9;
  step.bias_correction2 = 1.0 - 0.999;
  step.grad_scale = grad_scale;
  return step;
}

TEST(RoundedUpdate, CpuAdamEqualsUpdateThenCopyThenRoundBitForBit) {
  for (const StorageFormat format : {StorageFormat::bf16, StorageFormat::fp16})
    for (const double scale : {1.0, 1.0 / 1024})
      for (const GradAfterUpdate after : {GradAfterUpdate::kept, GradAfterUpdate::zeroed}) {
        const std::string what = std::string(format == StorageFormat::bf16 ? "bf16" : "fp16") +
                                 " scale " + std::to_string(scale) +
                                 (after == GradAfterUpdate::zeroed ? " zeroed" : " kept");
        State fused = random_state(70), apart = random_state(70);
        const int64_t n = static_cast<int64_t>(fused.master.size());
        const AdamStep step = adam_step(scale);
        cpu::adam_update_rounded(fused.master.data(), fused.value.data(), fused.grad.data(),
                                 fused.m.data(), fused.v.data(), n, step, after, format);
        cpu::adam_update<float>(apart.master.data(), apart.grad.data(), apart.m.data(),
                                apart.v.data(), n, step, after);
        apart.value = apart.master;
        cpu::round_to_storage(apart.value.data(), 1, n, n, format);
        EXPECT_TRUE(same_bits(fused.master, apart.master)) << what;
        EXPECT_TRUE(same_bits(fused.value, apart.value)) << what;
        EXPECT_TRUE(same_bits(fused.m, apart.m)) << what;
        EXPECT_TRUE(same_bits(fused.v, apart.v)) << what;
        EXPECT_TRUE(same_bits(fused.grad, apart.grad)) << what;
        EXPECT_FALSE(same_bits(fused.value, fused.master)) << what << ": nothing was rounded";
      }
}

TEST(RoundedUpdate, CpuSgdEqualsUpdateThenCopyThenRoundBitForBit) {
  for (const StorageFormat format : {StorageFormat::bf16, StorageFormat::fp16}) {
    State fused = random_state(80), apart = random_state(80);
    const int64_t n = static_cast<int64_t>(fused.master.size());
    cpu::sgd_update_rounded(fused.master.data(), fused.value.data(), fused.grad.data(), n, 0.01,
                            GradAfterUpdate::zeroed, format);
    cpu::sgd_update<float>(apart.master.data(), apart.grad.data(), n, 0.01,
                           GradAfterUpdate::zeroed);
    apart.value = apart.master;
    cpu::round_to_storage(apart.value.data(), 1, n, n, format);
    EXPECT_TRUE(same_bits(fused.master, apart.master));
    EXPECT_TRUE(same_bits(fused.value, apart.value));
    EXPECT_TRUE(same_bits(fused.grad, apart.grad));
  }
}

// Typed storage's copy (adam_update_16bit, sgd_update_16bit): the 16-bit values themselves,
// whose bits are the emulated update's float copy's, with the same master, moments and gradient.
using test::widened;

template <typename S>
void typed_update_equals_rounded(bool adam, const char* what) {
  State typed = random_state(110), emulated = random_state(110);
  const int64_t n = static_cast<int64_t>(typed.master.size());
  std::vector<S> value(static_cast<size_t>(n));
  if (adam) {
    cpu::adam_update_16bit<S>(typed.master.data(), value.data(), typed.grad.data(),
                              typed.m.data(), typed.v.data(), n, adam_step(1.0 / 64),
                              GradAfterUpdate::zeroed);
    cpu::adam_update_rounded(emulated.master.data(), emulated.value.data(),
                             emulated.grad.data(), emulated.m.data(), emulated.v.data(), n,
                             adam_step(1.0 / 64), GradAfterUpdate::zeroed, format_of<S>());
  } else {
    cpu::sgd_update_16bit<S>(typed.master.data(), value.data(), typed.grad.data(), n, 0.01,
                             GradAfterUpdate::kept);
    cpu::sgd_update_rounded(emulated.master.data(), emulated.value.data(), emulated.grad.data(),
                            n, 0.01, GradAfterUpdate::kept, format_of<S>());
  }
  EXPECT_TRUE(same_bits(widened(value), emulated.value)) << what;
  EXPECT_TRUE(same_bits(typed.master, emulated.master)) << what;
  EXPECT_TRUE(same_bits(typed.m, emulated.m)) << what;
  EXPECT_TRUE(same_bits(typed.v, emulated.v)) << what;
  EXPECT_TRUE(same_bits(typed.grad, emulated.grad)) << what;
#ifdef MLPSCALE_WITH_CUDA
  if (!cuda::gpu_available()) return;
  using cuda_test::GpuArray;
  const State start = random_state(110);
  GpuArray<float> master(start.master), grad(start.grad), m(start.m), v(start.v);
  GpuArray<S> gpu_value(std::vector<S>(static_cast<size_t>(n)));
  if (adam)
    cuda::adam_update_16bit<S>(master.get(), gpu_value.get(), grad.get(), m.get(), v.get(), n,
                               adam_step(1.0 / 64), GradAfterUpdate::zeroed);
  else
    cuda::sgd_update_16bit<S>(master.get(), gpu_value.get(), grad.get(), n, 0.01,
                              GradAfterUpdate::kept);
  // The GPU's copy is its own master rounded (its master may differ in the last bit).
  std::vector<float> rounded = master.host();
  cpu::round_to_storage(rounded.data(), 1, n, n, format_of<S>());
  EXPECT_TRUE(same_bits(widened(gpu_value.host()), rounded)) << what << " on the GPU";
#endif
}

TEST(RoundedUpdate, TypedCopyHasTheEmulatedCopysBits) {
  typed_update_equals_rounded<bf16>(true, "adam bf16");
  typed_update_equals_rounded<fp16>(true, "adam fp16");
  typed_update_equals_rounded<bf16>(false, "sgd bf16");
  typed_update_equals_rounded<fp16>(false, "sgd fp16");
}

TEST(RoundedUpdate, FullStorageHasNoRoundedUpdate) {
  State s = random_state(90, 4);
  EXPECT_THROW(cpu::adam_update_rounded(s.master.data(), s.value.data(), s.grad.data(),
                                        s.m.data(), s.v.data(), 4, adam_step(1.0),
                                        GradAfterUpdate::kept, StorageFormat::full),
               std::invalid_argument);
  EXPECT_THROW(cpu::sgd_update_rounded(s.master.data(), s.value.data(), s.grad.data(), 4, 0.1,
                                       GradAfterUpdate::kept, StorageFormat::full),
               std::invalid_argument);
}

TEST(RoundedUpdate, GpuRoundedCopyIsTheRoundedMaster) {
  MLPS_REQUIRE_GPU("adam_update_rounded");
#ifdef MLPSCALE_WITH_CUDA
  using cuda_test::GpuArray;
  for (const StorageFormat format : {StorageFormat::bf16, StorageFormat::fp16}) {
    const State start = random_state(100);
    const int64_t n = static_cast<int64_t>(start.master.size());
    GpuArray<float> master(start.master), value(start.value), grad(start.grad), m(start.m),
        v(start.v);
    cuda::adam_update_rounded(master.get(), value.get(), grad.get(), m.get(), v.get(), n,
                              adam_step(1.0 / 8), GradAfterUpdate::zeroed, format);
    State cpu_side = start;
    cpu::adam_update_rounded(cpu_side.master.data(), cpu_side.value.data(),
                             cpu_side.grad.data(), cpu_side.m.data(), cpu_side.v.data(), n,
                             adam_step(1.0 / 8), GradAfterUpdate::zeroed, format);
    std::vector<float> rounded = master.host();
    cpu::round_to_storage(rounded.data(), 1, n, n, format);
    EXPECT_TRUE(same_bits(value.host(), rounded));
    EXPECT_TRUE(cuda_test::matches_cpu(master.host(), cpu_side.master, "master"));
    EXPECT_TRUE(same_bits(grad.host(), std::vector<float>(static_cast<size_t>(n), 0.0f)));
  }
#endif
}

}  // namespace
}  // namespace mlps
