// The CUDA mixed-precision storage kernels against their CPU twins (which
// test_storage_rounding.cpp checks against the formats' definitions): rounding, including every
// tie between neighbouring 16-bit values, strided rows, the 16-bit wire, the non-finite count and
// Adam's grad_scale. Results must match bit for bit (NaN: both NaN). Without a GPU, or in a
// build without CUDA, every test is skipped visibly, naming the kernel it did not check.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"

namespace mlps {
namespace {

#ifdef MLPSCALE_WITH_CUDA

using namespace cuda_test;

// Bit-for-bit equal, except that any NaN matches any NaN (payloads may differ).
::testing::AssertionResult same_floats(const std::vector<float>& gpu,
                                       const std::vector<float>& cpu, const std::string& what) {
  if (gpu.size() != cpu.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const bool same = std::isnan(gpu[i]) ? std::isnan(cpu[i])
                                         : std::bit_cast<uint32_t>(gpu[i]) ==
                                               std::bit_cast<uint32_t>(cpu[i]);
    if (!same && wrong++ == 0) first = i;
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << wrong << " of " << gpu.size()
                                       << " differ, first [" << first << "] " << std::hexfloat
                                       << gpu[first] << " vs CPU " << cpu[first];
}

// Every 16-bit value's neighbourhood (the value, its ties with the next value and a float step
// either side of them), random bit patterns, and the special values.
std::vector<float> hard_inputs(StorageFormat format) {
  std::vector<uint16_t> bits(1u << 16);
  for (uint32_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  std::vector<float> values(bits.size());
  cpu::unpack_16bit(values.data(), bits.data(), static_cast<int64_t>(bits.size()), format);
  std::vector<float> x;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const float a = values[i], b = values[i + 1];
    x.push_back(a);
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
    x.insert(x.end(), {mid, std::nextafter(mid, a), std::nextafter(mid, b)});
  }
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) x.push_back(std::bit_cast<float>(any(rng)));
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {65520.0f, -65520.0f, 65519.0f, std::numeric_limits<float>::max(), inf, -inf,
                     std::numeric_limits<float>::quiet_NaN(), 0x1p-25f, 0x1p-26f, -0.0f});
  return x;
}

#endif  // MLPSCALE_WITH_CUDA

class CudaStorageTest : public ::testing::TestWithParam<StorageFormat> {};
INSTANTIATE_TEST_SUITE_P(Formats, CudaStorageTest,
                         ::testing::Values(StorageFormat::bf16, StorageFormat::fp16),
                         [](const auto& info) {
                           return std::string(info.param == StorageFormat::bf16 ? "bf16" : "fp16");
                         });

TEST_P(CudaStorageTest, RoundToStorageMatchesCpu) {
  MLPS_REQUIRE_GPU("round_to_storage");
#ifdef MLPSCALE_WITH_CUDA
  std::vector<float> x = hard_inputs(GetParam());
  const auto n = static_cast<int64_t>(x.size());
  GpuArray<float> x_d(x);
  cuda::round_to_storage(x_d.get(), 1, n, n, GetParam());
  cpu::round_to_storage(x.data(), 1, n, n, GetParam());
  EXPECT_TRUE(same_floats(x_d.host(), x, "rounded"));
#endif
}

TEST_P(CudaStorageTest, StridedRowsMatchCpuAndGapsStay) {
  MLPS_REQUIRE_GPU("round_to_storage");
#ifdef MLPSCALE_WITH_CUDA
  const int64_t rows = 129, cols = 300, ld = 333;
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(rows * ld));
  for (float& v : x) v = dist(rng);
  const std::vector<float> before = x;
  GpuArray<float> x_d(x);
  cuda::round_to_storage(x_d.get(), rows, cols, ld, GetParam());
  cpu::round_to_storage(x.data(), rows, cols, ld, GetParam());
  const std::vector<float> gpu = x_d.host();
  EXPECT_TRUE(same_floats(gpu, x, "strided"));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < ld; ++c)
      ASSERT_EQ(gpu[static_cast<size_t>(r * ld + c)], before[static_cast<size_t>(r * ld + c)])
          << "gap at row " << r << ", column " << c;
#endif
}

TEST_P(CudaStorageTest, PackAndUnpackMatchCpu) {
  MLPS_REQUIRE_GPU("pack_16bit/unpack_16bit");
#ifdef MLPSCALE_WITH_CUDA
  const std::vector<float> x = hard_inputs(GetParam());
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> wire(x.size());
  cpu::pack_16bit(wire.data(), x.data(), n, GetParam());
  GpuArray<float> x_d(x);
  GpuArray<uint16_t> wire_d(std::vector<uint16_t>(x.size(), 0));
  cuda::pack_16bit(wire_d.get(), x_d.get(), n, GetParam());
  const std::vector<uint16_t> gpu_wire = wire_d.host();
  std::vector<float> gpu_back(x.size()), cpu_back(x.size());
  cpu::unpack_16bit(gpu_back.data(), gpu_wire.data(), n, GetParam());
  cpu::unpack_16bit(cpu_back.data(), wire.data(), n, GetParam());
  EXPECT_TRUE(same_floats(gpu_back, cpu_back, "packed"));  // NaN encodings may differ

  // Unpacking every 16-bit pattern on the GPU gives the CPU's values.
  std::vector<uint16_t> every(1u << 16);
  for (uint32_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
  const auto all = static_cast<int64_t>(every.size());
  GpuArray<uint16_t> every_d(every);
  GpuArray<float> values_d(std::vector<float>(every.size(), 0.0f));
  cuda::unpack_16bit(values_d.get(), every_d.get(), all, GetParam());
  std::vector<float> values(every.size());
  cpu::unpack_16bit(values.data(), every.data(), all, GetParam());
  EXPECT_TRUE(same_floats(values_d.host(), values, "unpacked"));
#endif
}

template <typename T>
class CudaNonfiniteTest : public ::testing::Test {};
using CountTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaNonfiniteTest, CountTypes);

TYPED_TEST(CudaNonfiniteTest, CountMatchesCpu) {
  MLPS_REQUIRE_GPU("count_nonfinite");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  using limits = std::numeric_limits<T>;
  // Longer than the kernel's grid, so every thread strides over several elements.
  const int64_t n = (int64_t{1} << 22) + 17;
  std::vector<T> x(static_cast<size_t>(n), T(1));
  GpuArray<T> clean(x);
  EXPECT_EQ(cuda::count_nonfinite(clean.get(), n), 0);
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<int64_t> where(0, n - 1);
  const T specials[] = {limits::infinity(), -limits::infinity(), limits::quiet_NaN(),
                        limits::max(), limits::denorm_min()};
  for (int i = 0; i < 3000; ++i) x[static_cast<size_t>(where(rng))] = specials[i % 5];
  x[0] = limits::quiet_NaN();
  x[static_cast<size_t>(n - 1)] = limits::infinity();
  GpuArray<T> x_d(x);
  const int64_t want = cpu::count_nonfinite(x.data(), n);
  EXPECT_GT(want, 1000);
  EXPECT_EQ(cuda::count_nonfinite(x_d.get(), n), want);
  EXPECT_EQ(cuda::count_nonfinite(x_d.get(), n - 1), want - 1);  // only the first n are read
  EXPECT_EQ(cuda::count_nonfinite(x_d.get(), 0), 0);
#endif
}

// The loss scaler's per-step check: several tensors' counts added into one device total, read
// back once, equal the sum of the CPU twin's counts (and the CPU twin's own total).
TYPED_TEST(CudaNonfiniteTest, CountsAddIntoOneTotal) {
  MLPS_REQUIRE_GPU("add_nonfinite_count");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> a = {T(1), inf, T(2), -inf, std::numeric_limits<T>::quiet_NaN()};
  std::vector<T> b(300001, T(0.5));
  b[7] = inf;
  b[300000] = -inf;
  GpuArray<T> a_d(a), b_d(b);
  GpuArray<uint64_t> total({0});
  cuda::add_nonfinite_count(total.get(), a_d.get(), static_cast<int64_t>(a.size()));
  cuda::add_nonfinite_count(total.get(), b_d.get(), static_cast<int64_t>(b.size()));
  cuda::add_nonfinite_count(total.get(), b_d.get(), 0);
  EXPECT_EQ(total.host().front(), 5u);
  uint64_t cpu_total = 0;
  cpu::add_nonfinite_count(&cpu_total, a.data(), static_cast<int64_t>(a.size()));
  cpu::add_nonfinite_count(&cpu_total, b.data(), static_cast<int64_t>(b.size()));
  EXPECT_EQ(cpu_total, 5u);
#endif
}

template <typename T>
class CudaAdamGradScaleTest : public ::testing::Test {};
TYPED_TEST_SUITE(CudaAdamGradScaleTest, CountTypes);

// Adam with a loss-scale factor on the GPU: the same as the CPU twin, and, for a power-of-two
// scale, bit for bit the same as the unscaled step on the unscaled gradient.
TYPED_TEST(CudaAdamGradScaleTest, ScaledStepMatchesCpuAndUnscaledStep) {
  MLPS_REQUIRE_GPU("adam_update (grad_scale)");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 100003;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> param(n), m(n), v(n), grad(n), grad_scaled(n);
  for (int64_t i = 0; i < n; ++i) {
    param[i] = static_cast<T>(dist(rng));
    m[i] = static_cast<T>(0.1 * dist(rng));
    v[i] = static_cast<T>(0.01 * std::abs(dist(rng)));
    grad[i] = static_cast<T>(dist(rng));
    grad_scaled[i] = grad[i] * T(1024);
  }
  GpuArray<T> p_plain(param), m_plain(m), v_plain(v), g_plain(grad);
  GpuArray<T> p_scaled(param), m_scaled(m), v_scaled(v), g_scaled(grad_scaled);
  AdamStep step;
  step.lr = 0.05;
  step.bias_correction1 = 1.0 - step.beta1;
  step.bias_correction2 = 1.0 - step.beta2;
  cuda::adam_update<T>(p_plain.get(), g_plain.get(), m_plain.get(), v_plain.get(), n, step);
  step.grad_scale = 1.0 / 1024;
  cuda::adam_update<T>(p_scaled.get(), g_scaled.get(), m_scaled.get(), v_scaled.get(), n, step);
  cpu::adam_update<T>(param.data(), grad_scaled.data(), m.data(), v.data(), n, step);
  EXPECT_EQ(p_scaled.host(), p_plain.host());
  EXPECT_EQ(m_scaled.host(), m_plain.host());
  EXPECT_EQ(v_scaled.host(), v_plain.host());
  // Against the CPU twin: the same up to rounding (the GPU may fuse multiply-adds).
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  const std::vector<T> p_gpu = p_scaled.host(), m_gpu = m_scaled.host();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(static_cast<double>(p_gpu[i]), static_cast<double>(param[i]), tol) << i;
    ASSERT_NEAR(static_cast<double>(m_gpu[i]), static_cast<double>(m[i]), tol) << i;
  }
#endif
}

}  // namespace
}  // namespace mlps
