// The element-wise, LayerNorm and softmax kernels on 16-bit tensors (typed mixed precision): on
// each backend, a kernel instantiated for bf16 or fp16 must give bit for bit what the emulation
// gives there, the float kernel on the same values followed by round_to_storage of its 16-bit
// outputs; what Acc<T> keeps in fp32 (statistics, probabilities, losses, bias and γ/β gradients)
// must equal the float kernel's own output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/half_types.h"
#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"
#include "tests/half_values.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

using test::typed;
using test::widened;

static_assert(std::is_same_v<Acc<bf16>, float> && std::is_same_v<Acc<fp16>, float>);
static_assert(std::is_same_v<Acc<float>, float> && std::is_same_v<Acc<double>, double>);

enum class Where { cpu, gpu };

#ifdef MLPSCALE_WITH_CUDA
#define ON(where, fn, ...) ((where) == Where::gpu ? cuda::fn(__VA_ARGS__) : cpu::fn(__VA_ARGS__))
#else
#define ON(where, fn, ...) cpu::fn(__VA_ARGS__)
#endif

// A host vector's copy in a backend's memory, read back with host().
template <typename T>
class Mem {
 public:
  Mem(Where where, const std::vector<T>& host)
      : where_(where), count_(host.size()),
        data_(static_cast<T*>(ON(where, device_alloc, bytes()))) {
    ON(where, copy_to_device, data_, host.data(), bytes());
  }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
  ~Mem() { ON(where_, device_free, data_); }
  T* get() { return data_; }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    ON(where_, copy_to_host, out.data(), data_, bytes());
    return out;
  }

 private:
  size_t bytes() const { return count_ * sizeof(T); }
  Where where_;
  size_t count_;
  T* data_;
};

// n values of S (as floats; S = float: any floats) in [lo, hi], a few of them ±0, ±inf and NaN when `special`.
template <typename S>
std::vector<float> values_of(size_t n, uint64_t seed, double lo, double hi, bool special) {
  const std::vector<double> r = ref::random_values(n, seed, lo, hi);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(r[i]);
    if constexpr (!std::is_same_v<S, float>) v[i] = to_float(from_float<S>(v[i]));
  }
  if (special && n >= 5) {
    v[0] = 0.0f, v[1] = -0.0f, v[2] = std::numeric_limits<float>::infinity();
    v[3] = -std::numeric_limits<float>::infinity();
    v[4] = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

// The emulation of a 16-bit output: the float kernel's output rounded in place on the backend.
std::vector<float> rounded(Where where, Mem<float>& x, StorageFormat format) {
  std::vector<float> host = x.host();
  Mem<float> copy(where, host);
  ON(where, round_to_storage, copy.get(), 1, static_cast<int64_t>(host.size()),
     static_cast<int64_t>(host.size()), format);
  return copy.host();
}

template <typename T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

// The typed kernel's 16-bit output has the bits of the emulation's rounded float output.
template <typename S>
::testing::AssertionResult same_as_emulated(const std::vector<S>& typed_out,
                                            const std::vector<float>& emulated_out,
                                            const std::string& what) {
  if (same_bits(typed_out, typed<S>(emulated_out))) return ::testing::AssertionSuccess();
  for (size_t i = 0; i < typed_out.size(); ++i)
    if (typed_out[i].bits != from_float<S>(emulated_out[i]).bits)
      return ::testing::AssertionFailure()
             << what << ": element " << i << " is " << to_float(typed_out[i])
             << ", the emulation gives " << emulated_out[i];
  return ::testing::AssertionFailure() << what << ": sizes differ";
}

constexpr int64_t kRows = 37, kCols = 300, kClasses = 10;

template <typename S>
void elementwise_kernels(Where where, const std::string& label) {
  const StorageFormat fmt = format_of<S>();
  const size_t n = static_cast<size_t>(kRows * kCols);
  const std::vector<float> y0 = values_of<S>(n, 1, -3, 3, true), bias = values_of<S>(kCols, 2, -1, 1, false);
  {  // bias_add
    Mem<float> ef(where, y0), eb(where, bias);
    ON(where, bias_add<float>, ef.get(), eb.get(), kRows, kCols);
    Mem<S> ty(where, typed<S>(y0)), tb(where, typed<S>(bias));
    ON(where, bias_add<S>, ty.get(), tb.get(), kRows, kCols);
    EXPECT_TRUE(same_as_emulated(ty.host(), rounded(where, ef, fmt), label + " bias_add"));
  }
  for (bool accumulate : {false, true}) {  // bias_grad: fp32 sums of 16-bit rows
    const std::vector<float> start = values_of<float>(kCols, 3, -1, 1, false);
    const std::vector<float> dy = values_of<S>(n, 4, -3, 3, false);
    Mem<float> ed(where, start), edy(where, dy), td(where, start);
    Mem<S> tdy(where, typed<S>(dy));
    ON(where, bias_grad<float>, ed.get(), edy.get(), kRows, kCols, accumulate);
    ON(where, bias_grad<S>, td.get(), tdy.get(), kRows, kCols, accumulate);
    EXPECT_TRUE(same_bits(td.host(), ed.host())) << label << " bias_grad accumulate " << accumulate;
  }
  const std::vector<float> x = values_of<S>(n, 5, -2, 2, true), d = values_of<S>(n, 6, -2, 2, true);
  {  // relu_forward and relu_backward select values: nothing to round
    Mem<float> ey(where, std::vector<float>(n)), ex(where, x);
    ON(where, relu_forward<float>, ey.get(), ex.get(), static_cast<int64_t>(n));
    Mem<S> tyv(where, std::vector<S>(n)), tx(where, typed<S>(x));
    ON(where, relu_forward<S>, tyv.get(), tx.get(), static_cast<int64_t>(n));
    EXPECT_TRUE(same_as_emulated(tyv.host(), ey.host(), label + " relu_forward"));
    Mem<float> edx(where, std::vector<float>(n)), edy(where, d);
    ON(where, relu_backward<float>, edx.get(), edy.get(), ey.get(), static_cast<int64_t>(n));
    Mem<S> tdx(where, std::vector<S>(n)), tdy(where, typed<S>(d));
    ON(where, relu_backward<S>, tdx.get(), tdy.get(), tyv.get(), static_cast<int64_t>(n));
    EXPECT_TRUE(same_as_emulated(tdx.host(), edx.host(), label + " relu_backward"));
  }
  {  // residual_add, with sums that overflow fp16
    const std::vector<float> big = values_of<S>(n, 7, -60000, 60000, false);
    Mem<float> ea(where, big), eb(where, x);
    ON(where, residual_add<float>, ea.get(), ea.get(), eb.get(), static_cast<int64_t>(n));
    Mem<S> ta(where, typed<S>(big)), tb(where, typed<S>(x));
    ON(where, residual_add<S>, ta.get(), ta.get(), tb.get(), static_cast<int64_t>(n));
    EXPECT_TRUE(same_as_emulated(ta.host(), rounded(where, ea, fmt), label + " residual_add"));
  }
}

template <typename S>
void layernorm_kernels(Where where, const std::string& label) {
  const StorageFormat fmt = format_of<S>();
  const size_t n = static_cast<size_t>(kRows * kCols);
  const std::vector<float> x = values_of<S>(n, 11, -4, 6, false),
                           gamma = values_of<S>(kCols, 12, 0.5, 1.5, false),
                           beta = values_of<S>(kCols, 13, -0.5, 0.5, false),
                           dy = values_of<S>(n, 14, -1, 1, false);
  Mem<float> ex(where, x), eg(where, gamma), eb(where, beta), ey(where, std::vector<float>(n));
  Mem<float> emean(where, std::vector<float>(kRows)), erstd(where, std::vector<float>(kRows));
  ON(where, layernorm_forward<float>, ey.get(), emean.get(), erstd.get(), ex.get(), eg.get(),
     eb.get(), kRows, kCols, 1e-5);
  Mem<S> tx(where, typed<S>(x)), tg(where, typed<S>(gamma)), tb(where, typed<S>(beta)),
      ty(where, std::vector<S>(n));
  Mem<float> tmean(where, std::vector<float>(kRows)), trstd(where, std::vector<float>(kRows));
  ON(where, layernorm_forward<S>, ty.get(), tmean.get(), trstd.get(), tx.get(), tg.get(),
     tb.get(), kRows, kCols, 1e-5);
  EXPECT_TRUE(same_as_emulated(ty.host(), rounded(where, ey, fmt), label + " layernorm_forward y"));
  EXPECT_TRUE(same_bits(tmean.host(), emean.host())) << label << " layernorm_forward mean";
  EXPECT_TRUE(same_bits(trstd.host(), erstd.host())) << label << " layernorm_forward rstd";

  for (bool accumulate : {false, true}) {
    const std::vector<float> start = values_of<float>(kCols, 15, -1, 1, false);
    Mem<float> edy(where, dy), edx(where, std::vector<float>(n)), edg(where, start),
        edb(where, start);
    ON(where, layernorm_backward<float>, edx.get(), edg.get(), edb.get(), edy.get(), ex.get(),
       emean.get(), erstd.get(), eg.get(), kRows, kCols, accumulate);
    Mem<S> tdy(where, typed<S>(dy)), tdx(where, std::vector<S>(n));
    Mem<float> tdg(where, start), tdb(where, start);
    ON(where, layernorm_backward<S>, tdx.get(), tdg.get(), tdb.get(), tdy.get(), tx.get(),
       tmean.get(), trstd.get(), tg.get(), kRows, kCols, accumulate);
    const std::string what = label + " layernorm_backward accumulate " + std::to_string(accumulate);
    EXPECT_TRUE(same_as_emulated(tdx.host(), rounded(where, edx, fmt), what + " dx"));
    EXPECT_TRUE(same_bits(tdg.host(), edg.host())) << what << " dgamma";
    EXPECT_TRUE(same_bits(tdb.host(), edb.host())) << what << " dbeta";
  }
}

template <typename S>
void softmax_kernels(Where where, const std::string& label) {
  const StorageFormat fmt = format_of<S>();
  const size_t n = static_cast<size_t>(kRows * kClasses);
  const std::vector<float> logits = values_of<S>(n, 21, -8, 8, false);
  std::vector<int32_t> labels(kRows);
  for (int64_t r = 0; r < kRows; ++r) labels[r] = static_cast<int32_t>((r * 7) % kClasses);
  Mem<int32_t> lab(where, labels);
  Mem<float> ez(where, logits), ep(where, std::vector<float>(n)),
      eloss(where, std::vector<float>(kRows));
  ON(where, softmax_xent_forward<float>, ep.get(), eloss.get(), ez.get(), lab.get(), kRows,
     kClasses);
  Mem<S> tz(where, typed<S>(logits));
  Mem<float> tp(where, std::vector<float>(n)), tloss(where, std::vector<float>(kRows));
  ON(where, softmax_xent_forward<S>, tp.get(), tloss.get(), tz.get(), lab.get(), kRows, kClasses);
  EXPECT_TRUE(same_bits(tp.host(), ep.host())) << label << " softmax_xent_forward probs";
  EXPECT_TRUE(same_bits(tloss.host(), eloss.host())) << label << " softmax_xent_forward loss";

  Mem<float> edz(where, std::vector<float>(n));
  ON(where, softmax_xent_backward<float>, edz.get(), ep.get(), lab.get(), kRows, kClasses,
     1.0 / 3.0);
  Mem<S> tdz(where, std::vector<S>(n));
  ON(where, softmax_xent_backward<S>, tdz.get(), tp.get(), lab.get(), kRows, kClasses, 1.0 / 3.0);
  EXPECT_TRUE(same_as_emulated(tdz.host(), rounded(where, edz, fmt),
                               label + " softmax_xent_backward"));
}

template <typename S>
void all_kernels(Where where, const char* name) {
  const std::string label = std::string(where == Where::gpu ? "gpu " : "cpu ") + name;
  elementwise_kernels<S>(where, label);
  layernorm_kernels<S>(where, label);
  softmax_kernels<S>(where, label);
}

TEST(TypedKernels, CpuEqualsTheEmulatedRoundingBitForBit) {
  all_kernels<bf16>(Where::cpu, "bf16");
  all_kernels<fp16>(Where::cpu, "fp16");
}

TEST(TypedKernels, GpuEqualsTheEmulatedRoundingBitForBit) {
  MLPS_REQUIRE_GPU("element-wise, LayerNorm and softmax on 16-bit tensors");
  all_kernels<bf16>(Where::gpu, "bf16");
  all_kernels<fp16>(Where::gpu, "fp16");
}

}  // namespace
}  // namespace mlps
