// Mixed-precision storage kernels of the CPU backend: bf16/fp16 rounding against values taken
// from the formats' definitions (ties to even, fp16 overflow and subnormals, NaN), every tie
// between neighbouring 16-bit values, random bit patterns against a double-arithmetic
// reference, strided rows, the 16-bit wire encoding, the non-finite count, and Adam's
// grad_scale.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/storage_rounding_reference.h"

namespace mlps {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float rounded(float x, StorageFormat format) {
  cpu::round_to_storage(&x, 1, 1, 1, format);
  return x;
}

// Same value and, for zeros, the same sign (NaNs are checked separately).
::testing::AssertionResult same_float(float got, float want) {
  if (std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << got << " != " << want;
}

TEST(StorageRounding, Bf16ExactValuesFromTheDefinition) {
  const auto bf16 = StorageFormat::bf16;
  EXPECT_TRUE(same_float(rounded(1.0f + 0x1p-8f, bf16), 1.0f));  // tie → even (1)
  EXPECT_TRUE(same_float(rounded(1.0f + 3 * 0x1p-9f, bf16), 1.0f + 0x1p-7f));
  EXPECT_TRUE(same_float(rounded(1.0f + 3 * 0x1p-8f, bf16), 1.0f + 0x1p-6f));  // tie → even
  EXPECT_TRUE(same_float(rounded(1.0f + 0x1p-9f, bf16), 1.0f));
  EXPECT_TRUE(same_float(rounded(-(1.0f + 3 * 0x1p-9f), bf16), -(1.0f + 0x1p-7f)));
  EXPECT_TRUE(same_float(rounded(2.0f - 0x1p-9f, bf16), 2.0f));  // rounds up into the next binade
  EXPECT_TRUE(same_float(rounded(3.140625f, bf16), 3.140625f));  // already bf16
  EXPECT_TRUE(same_float(rounded(std::numeric_limits<float>::max(), bf16), kInf));
  EXPECT_TRUE(same_float(rounded(-std::numeric_limits<float>::max(), bf16), -kInf));
  EXPECT_TRUE(same_float(rounded(0x1p-133f, bf16), 0x1p-133f));  // smallest bf16 subnormal
  EXPECT_TRUE(same_float(rounded(0x1p-134f, bf16), 0.0f));        // tie → even (0)
  EXPECT_TRUE(same_float(rounded(3 * 0x1p-134f, bf16), 0x1p-132f));
  EXPECT_TRUE(same_float(rounded(-0.0f, bf16), -0.0f));
  EXPECT_TRUE(same_float(rounded(kInf, bf16), kInf));
  EXPECT_TRUE(same_float(rounded(-kInf, bf16), -kInf));
  EXPECT_TRUE(std::isnan(rounded(kNaN, bf16)));
  EXPECT_TRUE(std::isnan(rounded(-kNaN, bf16)));
  // A NaN whose payload sits only in the dropped bits must not become inf.
  EXPECT_TRUE(std::isnan(rounded(std::bit_cast<float>(0x7f800001u), bf16)));
  EXPECT_TRUE(std::isnan(rounded(std::bit_cast<float>(0xff80ffffu), bf16)));
}

TEST(StorageRounding, Fp16ExactValuesFromTheDefinition) {
  const auto fp16 = StorageFormat::fp16;
  EXPECT_TRUE(same_float(rounded(65504.0f, fp16), 65504.0f));  // largest finite
  EXPECT_TRUE(same_float(rounded(65519.0f, fp16), 65504.0f));
  EXPECT_TRUE(same_float(rounded(65520.0f, fp16), kInf));  // the tie above 65504 overflows
  EXPECT_TRUE(same_float(rounded(-65520.0f, fp16), -kInf));
  EXPECT_TRUE(same_float(rounded(1e10f, fp16), kInf));
  EXPECT_TRUE(same_float(rounded(1.0f + 0x1p-11f, fp16), 1.0f));  // tie → even
  EXPECT_TRUE(same_float(rounded(1.0f + 3 * 0x1p-11f, fp16), 1.0f + 0x1p-9f));  // tie → even
  EXPECT_TRUE(same_float(rounded(1.0f + 0x1p-12f + 0x1p-11f, fp16), 1.0f + 0x1p-10f));
  EXPECT_TRUE(same_float(rounded(2049.0f, fp16), 2048.0f));
  EXPECT_TRUE(same_float(rounded(2051.0f, fp16), 2052.0f));
  EXPECT_TRUE(same_float(rounded(0x1p-14f, fp16), 0x1p-14f));  // smallest normal
  EXPECT_TRUE(same_float(rounded(0x1p-14f - 0x1p-25f, fp16), 0x1p-14f));  // tie → even, up
  EXPECT_TRUE(same_float(rounded(0x1p-24f, fp16), 0x1p-24f));  // smallest subnormal
  EXPECT_TRUE(same_float(rounded(0x1p-25f, fp16), 0.0f));      // tie → even (0)
  EXPECT_TRUE(same_float(rounded(0x1p-25f + 0x1p-40f, fp16), 0x1p-24f));
  EXPECT_TRUE(same_float(rounded(0x1p-26f, fp16), 0.0f));
  EXPECT_TRUE(same_float(rounded(-0x1p-26f, fp16), -0.0f));
  EXPECT_TRUE(same_float(rounded(3 * 0x1p-25f, fp16), 0x1p-23f));  // 1.5 units: tie → 2
  EXPECT_TRUE(same_float(rounded(5 * 0x1p-25f, fp16), 0x1p-23f));  // 2.5 units: tie → 2
  EXPECT_TRUE(same_float(rounded(7 * 0x1p-26f, fp16), 0x1p-23f));  // 1.75 units → 2
  EXPECT_TRUE(same_float(rounded(1e-30f, fp16), 0.0f));
  EXPECT_TRUE(same_float(rounded(std::numeric_limits<float>::denorm_min(), fp16), 0.0f));
  EXPECT_TRUE(same_float(rounded(kInf, fp16), kInf));
  EXPECT_TRUE(same_float(rounded(-kInf, fp16), -kInf));
  EXPECT_TRUE(std::isnan(rounded(kNaN, fp16)));
  EXPECT_TRUE(std::isnan(rounded(std::bit_cast<float>(0x7f800001u), fp16)));
}

TEST(StorageRounding, FullIsANoOp) {
  std::vector<float> x = {1.0f + 0x1p-20f, 65520.0f, 0x1p-30f, -3.3f};
  const std::vector<float> before = x;
  cpu::round_to_storage(x.data(), 2, 2, 2, StorageFormat::full);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(same_float(x[i], before[i])) << i;
}

// Between any two neighbouring finite 16-bit values a < b: their midpoint goes to the one with
// an even last bit, and one float step either side of it goes to the nearer one. Every 16-bit
// value is visited, so every binade and the subnormals are covered (overflow is checked above).
void check_every_tie(StorageFormat format) {
  std::vector<uint16_t> bits(1u << 16);
  for (uint32_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  std::vector<float> values(bits.size());
  cpu::unpack_16bit(values.data(), bits.data(), static_cast<int64_t>(bits.size()), format);
  int checked = 0;
  for (uint32_t i = 0; i + 1 < bits.size(); ++i) {
    const float a = values[i], b = values[i + 1];
    if (!std::isfinite(a) || !std::isfinite(b) || std::signbit(a) != std::signbit(b)) continue;
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // exact in float
    const float even = (i % 2 == 0) ? a : b;
    ASSERT_TRUE(same_float(rounded(mid, format), even)) << "tie between bits " << i;
    ASSERT_TRUE(same_float(rounded(std::nextafter(mid, a), format), a)) << "below tie " << i;
    ASSERT_TRUE(same_float(rounded(std::nextafter(mid, b), format), b)) << "above tie " << i;
    ++checked;
  }
  EXPECT_GT(checked, 60000);
}

TEST(StorageRounding, Bf16EveryTieGoesToEven) { check_every_tie(StorageFormat::bf16); }
TEST(StorageRounding, Fp16EveryTieGoesToEven) { check_every_tie(StorageFormat::fp16); }

// Random bit patterns, biased towards each format's own range, against the reference.
void check_random_patterns(StorageFormat format, int low_exponent, int high_exponent) {
  std::mt19937_64 rng(format == StorageFormat::bf16 ? 11 : 12);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<uint32_t> exponent(static_cast<uint32_t>(low_exponent + 127),
                                                   static_cast<uint32_t>(high_exponent + 127));
  const int n = 400000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) {
    uint32_t b = any(rng);
    if (i % 2) b = (b & 0x807fffffu) | (exponent(rng) << 23);
    x[i] = std::bit_cast<float>(b);
  }
  std::vector<float> y = x;
  cpu::round_to_storage(y.data(), 1, n, n, format);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) {
      wrong += std::isnan(y[i]) ? 0 : 1;
      continue;
    }
    const float want = ref::round_to(x[i], format);
    if (!same_float(y[i], want) && wrong++ == 0)
      ADD_FAILURE() << std::hexfloat << x[i] << " → " << y[i] << ", expected " << want;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(StorageRounding, Bf16RandomPatternsMatchReference) {
  check_random_patterns(StorageFormat::bf16, -140, 127);
}
TEST(StorageRounding, Fp16RandomPatternsMatchReference) {
  check_random_patterns(StorageFormat::fp16, -27, 17);
}

TEST(StorageRounding, StridedRowsLeaveGapsUntouched) {
  const int64_t rows = 3, cols = 4, ld = 7;
  std::vector<float> x(static_cast<size_t>(rows * ld));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i) * 0x1p-12f;
  const std::vector<float> before = x;
  cpu::round_to_storage(x.data(), rows, cols, ld, StorageFormat::bf16);
  int changed = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      const size_t i = static_cast<size_t>(r * ld + c);
      const float want = c < cols ? ref::round_to(before[i], StorageFormat::bf16) : before[i];
      EXPECT_TRUE(same_float(x[i], want)) << "row " << r << ", column " << c;
      changed += x[i] != before[i] ? 1 : 0;
    }
  EXPECT_GT(changed, 0) << "the inputs were meant to need rounding";
  // The last row may end at cols: nothing past rows·ld − (ld − cols) is touched.
  std::vector<float> tight(static_cast<size_t>((rows - 1) * ld + cols), 1.0f + 0x1p-12f);
  cpu::round_to_storage(tight.data(), rows, cols, ld, StorageFormat::fp16);
  EXPECT_EQ(tight[static_cast<size_t>((rows - 1) * ld)], 1.0f);
}

TEST(StorageRounding, RejectsBadShapes) {
  float x[4] = {};
  EXPECT_THROW(cpu::round_to_storage(x, 2, 3, 2, StorageFormat::bf16), std::invalid_argument);
  EXPECT_THROW(cpu::round_to_storage(x, -1, 1, 1, StorageFormat::fp16), std::invalid_argument);
  EXPECT_NO_THROW(cpu::round_to_storage(nullptr, 0, 0, 0, StorageFormat::fp16));
}

// ---- the 16-bit wire

TEST(StoragePacking, KnownEncodings) {
  const std::vector<float> x = {1.0f, -2.0f, 65504.0f, 0x1p-24f, 0.0f, -kInf, 1.0f + 0x1p-8f};
  std::vector<uint16_t> bf16(x.size()), fp16(x.size());
  cpu::pack_16bit(bf16.data(), x.data(), static_cast<int64_t>(x.size()), StorageFormat::bf16);
  cpu::pack_16bit(fp16.data(), x.data(), static_cast<int64_t>(x.size()), StorageFormat::fp16);
  // bf16 has 8 significant bits: 65504 = 0xffe0 rounds up to 2^16; 2^-8 is 4 fp16 ulps of 1.
  const std::vector<uint16_t> want_bf16 = {0x3f80, 0xc000, 0x4780, 0x3380, 0x0000, 0xff80, 0x3f80};
  const std::vector<uint16_t> want_fp16 = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x0000, 0xfc00, 0x3c04};
  EXPECT_EQ(bf16, want_bf16);
  EXPECT_EQ(fp16, want_fp16);
}

// pack then unpack is round_to_storage; unpack then pack is the identity on every non-NaN
// 16-bit pattern (NaN stays NaN).
void check_round_trip(StorageFormat format) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng) * (i % 3 ? 1.0f : 1e-6f);
  x[0] = kNaN;
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> wire(x.size());
  std::vector<float> back(x.size()), want = x;
  cpu::pack_16bit(wire.data(), x.data(), n, format);
  cpu::unpack_16bit(back.data(), wire.data(), n, format);
  cpu::round_to_storage(want.data(), 1, n, n, format);
  EXPECT_TRUE(std::isnan(back[0]));
  for (size_t i = 1; i < x.size(); ++i) ASSERT_TRUE(same_float(back[i], want[i])) << i;

  std::vector<uint16_t> every(1u << 16), again(every.size());
  for (uint32_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
  std::vector<float> values(every.size());
  const auto all = static_cast<int64_t>(every.size());
  cpu::unpack_16bit(values.data(), every.data(), all, format);
  cpu::pack_16bit(again.data(), values.data(), all, format);
  for (uint32_t i = 0; i < every.size(); ++i) {
    if (std::isnan(values[i])) {
      const uint16_t exponent_mask = format == StorageFormat::bf16 ? 0x7f80 : 0x7c00;
      ASSERT_EQ(again[i] & exponent_mask, exponent_mask) << i;
      ASSERT_NE(again[i] & ~0x8000 & ~exponent_mask, 0) << "NaN became inf: " << i;
    } else {
      ASSERT_EQ(again[i], every[i]) << i;
    }
  }
}

TEST(StoragePacking, Bf16RoundTrip) { check_round_trip(StorageFormat::bf16); }
TEST(StoragePacking, Fp16RoundTrip) { check_round_trip(StorageFormat::fp16); }

TEST(StoragePacking, FullIsNotAWireFormat) {
  float x = 1.0f;
  uint16_t w = 0;
  EXPECT_THROW(cpu::pack_16bit(&w, &x, 1, StorageFormat::full), std::invalid_argument);
  EXPECT_THROW(cpu::unpack_16bit(&x, &w, 1, StorageFormat::full), std::invalid_argument);
}

// ---- count_nonfinite

template <typename T>
class NonfiniteCountTest : public ::testing::Test {};
using CountTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NonfiniteCountTest, CountTypes);

TYPED_TEST(NonfiniteCountTest, CountsInfAndNaNOnly) {
  using T = TypeParam;
  using limits = std::numeric_limits<T>;
  std::vector<T> x(1000, T(0.5));
  EXPECT_EQ(cpu::count_nonfinite(x.data(), static_cast<int64_t>(x.size())), 0);
  x[3] = limits::infinity();
  x[100] = -limits::infinity();
  x[500] = limits::quiet_NaN();
  x[999] = -limits::quiet_NaN();
  x[7] = limits::max();
  x[8] = limits::denorm_min();
  x[9] = -limits::max();
  EXPECT_EQ(cpu::count_nonfinite(x.data(), static_cast<int64_t>(x.size())), 4);
  EXPECT_EQ(cpu::count_nonfinite(x.data(), 999), 3);  // only the first n are read
  EXPECT_EQ(cpu::count_nonfinite(x.data(), 4), 1);
  EXPECT_EQ(cpu::count_nonfinite(x.data(), 0), 0);
  EXPECT_THROW(cpu::count_nonfinite(x.data(), -1), std::invalid_argument);
}

// ---- Adam's grad_scale

template <typename T>
class AdamGradScaleTest : public ::testing::Test {};
using AdamTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(AdamGradScaleTest, AdamTypes);

template <typename T>
struct AdamState {
  std::vector<T> param, m, v;
};

template <typename T>
AdamState<T> initial_state(size_t n) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  AdamState<T> s{std::vector<T>(n), std::vector<T>(n), std::vector<T>(n)};
  for (size_t i = 0; i < n; ++i) {
    s.param[i] = static_cast<T>(dist(rng));
    s.m[i] = static_cast<T>(0.1 * dist(rng));
    s.v[i] = static_cast<T>(0.01 * std::abs(dist(rng)));
  }
  return s;
}

template <typename T>
std::vector<T> gradient(size_t n, int step) {
  std::mt19937_64 rng(40 + static_cast<uint64_t>(step));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> g(n);
  for (T& x : g) x = static_cast<T>(dist(rng));
  return g;
}

AdamStep adam_step(int t) {
  AdamStep step;
  step.lr = 0.05;
  step.bias_correction1 = 1.0 - std::pow(step.beta1, t);
  step.bias_correction2 = 1.0 - std::pow(step.beta2, t);
  return step;
}

// A scale that is a power of two undoes the same power exactly, so the steps must agree bit
// for bit: scale s on g/s equals scale 1 on g.
TYPED_TEST(AdamGradScaleTest, ScaledGradientsGiveTheUnscaledStep) {
  using T = TypeParam;
  const size_t n = 1001;
  for (const double factor : {2.0, 65536.0, 0x1p-10}) {
    AdamState<T> plain = initial_state<T>(n), scaled = plain;
    for (int t = 1; t <= 3; ++t) {
      std::vector<T> g = gradient<T>(n, t);
      std::vector<T> g_times = g;
      for (T& x : g_times) x *= static_cast<T>(factor);
      AdamStep step = adam_step(t);
      cpu::adam_update<T>(plain.param.data(), g.data(), plain.m.data(), plain.v.data(),
                          static_cast<int64_t>(n), step);
      step.grad_scale = 1.0 / factor;
      cpu::adam_update<T>(scaled.param.data(), g_times.data(), scaled.m.data(), scaled.v.data(),
                          static_cast<int64_t>(n), step);
    }
    EXPECT_EQ(scaled.param, plain.param) << "factor " << factor;
    EXPECT_EQ(scaled.m, plain.m) << "factor " << factor;
    EXPECT_EQ(scaled.v, plain.v) << "factor " << factor;
  }
}

// The scale really is applied: 0.5 on g differs from 1 on g, and equals 1 on g/2.
TYPED_TEST(AdamGradScaleTest, ScaleChangesTheStep) {
  using T = TypeParam;
  const size_t n = 257;
  AdamState<T> a = initial_state<T>(n), b = a, c = a;
  std::vector<T> g = gradient<T>(n, 1);
  std::vector<T> half = g;
  for (T& x : half) x /= 2;
  AdamStep step = adam_step(1);
  cpu::adam_update<T>(a.param.data(), g.data(), a.m.data(), a.v.data(), static_cast<int64_t>(n),
                      step);
  cpu::adam_update<T>(c.param.data(), half.data(), c.m.data(), c.v.data(),
                      static_cast<int64_t>(n), step);
  step.grad_scale = 0.5;
  cpu::adam_update<T>(b.param.data(), g.data(), b.m.data(), b.v.data(), static_cast<int64_t>(n),
                      step);
  EXPECT_NE(b.m, a.m);
  EXPECT_EQ(b.m, c.m);
  EXPECT_EQ(b.v, c.v);
  EXPECT_EQ(b.param, c.param);
}

// With grad_scale 1 the kernel does exactly the operations it did before grad_scale existed
// (the formula below, verbatim, in the parameter's precision), bit for bit.
TYPED_TEST(AdamGradScaleTest, UnitScaleIsTheUnscaledFormulaBitForBit) {
  using T = TypeParam;
  const size_t n = 1003;
  AdamState<T> kernel = initial_state<T>(n), formula = kernel;
  for (int t = 1; t <= 3; ++t) {
    std::vector<T> g = gradient<T>(n, t);
    const AdamStep step = adam_step(t);
    cpu::adam_update<T>(kernel.param.data(), g.data(), kernel.m.data(), kernel.v.data(),
                        static_cast<int64_t>(n), step);
    const T beta1 = static_cast<T>(step.beta1), beta2 = static_cast<T>(step.beta2);
    const T one_minus_beta1 = static_cast<T>(1.0 - step.beta1);
    const T one_minus_beta2 = static_cast<T>(1.0 - step.beta2);
    const T step_size = static_cast<T>(step.lr / step.bias_correction1);
    const T inv_sqrt_bc2 = static_cast<T>(1.0 / std::sqrt(step.bias_correction2));
    const T eps = static_cast<T>(step.eps);
    for (size_t i = 0; i < n; ++i) {
      const T mi = beta1 * formula.m[i] + one_minus_beta1 * g[i];
      const T vi = beta2 * formula.v[i] + one_minus_beta2 * g[i] * g[i];
      formula.m[i] = mi;
      formula.v[i] = vi;
      formula.param[i] -= step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    }
  }
  EXPECT_EQ(kernel.param, formula.param);
  EXPECT_EQ(kernel.m, formula.m);
  EXPECT_EQ(kernel.v, formula.v);
}

}  // namespace
}  // namespace mlps
