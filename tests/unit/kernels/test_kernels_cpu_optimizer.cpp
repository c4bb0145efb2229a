// The CPU optimizer kernels (Adam, SGD), in float and double, against the naive fp64
// reference; the CPU memory functions; the overlaps every kernel refuses.
#include <gtest/gtest.h>

#include <stdexcept>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

using ref::Vec;

template <typename T>
class CpuOptimizerKernelsTest : public ref::KernelTest<T> {};
TYPED_TEST_SUITE(CpuOptimizerKernelsTest, ref::KernelTypes);

TYPED_TEST(CpuOptimizerKernelsTest, AdamUpdateOverSeveralSteps) {
  using T = TypeParam;
  const int64_t n = 777;
  AdamStep step;
  step.lr = 0.05;  // large enough that the update is visible against the parameter in fp32
  Vec param = ref::rounded_to<T>(ref::random_values(n, 50));
  Vec m = ref::rounded_to<T>(ref::random_values(n, 51, -0.1, 0.1));
  Vec v = ref::rounded_to<T>(ref::random_values(n, 52, 0.0, 0.01));
  std::vector<T> param_t = ref::cast_to<T>(param), m_t = ref::cast_to<T>(m),
                 v_t = ref::cast_to<T>(v);
  for (int t = 1; t <= 3; ++t) {
    step.bias_correction1 = 1.0 - std::pow(step.beta1, t);
    step.bias_correction2 = 1.0 - std::pow(step.beta2, t);
    const Vec grad = ref::rounded_to<T>(ref::random_values(n, 60 + t));
    std::vector<T> grad_t = ref::cast_to<T>(grad);
    const Vec param_before = ref::to_double(param_t);
    cpu::adam_update<T>(param_t.data(), grad_t.data(), m_t.data(), v_t.data(), n, step);
    ref::adam_update(param, grad, m, v, step.lr, step.beta1, step.beta2, step.eps,
                     step.bias_correction1, step.bias_correction2);
    // The reference continues from the kernel's state so errors do not compound over steps.
    Vec delta_t(n), delta(n);
    for (int64_t i = 0; i < n; ++i) {
      delta_t[i] = static_cast<double>(param_t[i]) - param_before[i];
      delta[i] = param[i] - param_before[i];
    }
    EXPECT_TRUE(ref::all_close(param_t, param, this->tol, "param")) << "step " << t;
    EXPECT_TRUE(ref::all_close(delta_t, delta, 20 * this->tol, "param update")) << "step " << t;
    EXPECT_TRUE(ref::all_close(m_t, m, this->tol, "m")) << "step " << t;
    EXPECT_TRUE(ref::all_close(v_t, v, this->tol, "v")) << "step " << t;
    param = ref::to_double(param_t);
    m = ref::to_double(m_t);
    v = ref::to_double(v_t);
  }
}

TYPED_TEST(CpuOptimizerKernelsTest, SgdUpdate) {
  using T = TypeParam;
  const int64_t n = 500;
  Vec param = ref::rounded_to<T>(ref::random_values(n, 70));
  const Vec grad = ref::rounded_to<T>(ref::random_values(n, 71));
  std::vector<T> param_t = ref::cast_to<T>(param);
  std::vector<T> grad_t = ref::cast_to<T>(grad);
  cpu::sgd_update<T>(param_t.data(), grad_t.data(), n, 0.1);
  ref::sgd_update(param, grad, 0.1);
  EXPECT_TRUE(ref::all_close(param_t, param, this->tol, "param"));
}

// GradAfterUpdate::zeroed: the same parameter and moment bits as keeping the gradient (scaled
// and unscaled), and every gradient element zero afterwards (so a backward can add into it).
TYPED_TEST(CpuOptimizerKernelsTest, ZeroingTheGradientLeavesTheUpdateUnchanged) {
  using T = TypeParam;
  const int64_t n = 100003;  // several threads' chunks, and a vector tail
  const std::vector<T> grad = ref::cast_to<T>(ref::random_values(n, 80));
  const std::vector<T> param = ref::cast_to<T>(ref::random_values(n, 81));
  const std::vector<T> m0 = ref::cast_to<T>(ref::random_values(n, 82, -0.1, 0.1));
  const std::vector<T> v0 = ref::cast_to<T>(ref::random_values(n, 83, 0.0, 0.01));
  const std::vector<T> zeros(n, T(0));
  for (double grad_scale : {1.0, 0.5}) {
    AdamStep step;
    step.lr = 0.01;
    step.grad_scale = grad_scale;
    std::vector<T> p_kept = param, m_kept = m0, v_kept = v0, g_kept = grad;
    std::vector<T> p_zero = param, m_zero = m0, v_zero = v0, g_zero = grad;
    cpu::adam_update<T>(p_kept.data(), g_kept.data(), m_kept.data(), v_kept.data(), n, step,
                        GradAfterUpdate::kept);
    cpu::adam_update<T>(p_zero.data(), g_zero.data(), m_zero.data(), v_zero.data(), n, step,
                        GradAfterUpdate::zeroed);
    EXPECT_EQ(p_zero, p_kept) << "grad scale " << grad_scale;
    EXPECT_EQ(m_zero, m_kept) << "grad scale " << grad_scale;
    EXPECT_EQ(v_zero, v_kept) << "grad scale " << grad_scale;
    EXPECT_EQ(g_kept, grad) << "kept";
    EXPECT_EQ(g_zero, zeros) << "zeroed, grad scale " << grad_scale;
  }
  std::vector<T> p_kept = param, p_zero = param, g_kept = grad, g_zero = grad;
  cpu::sgd_update<T>(p_kept.data(), g_kept.data(), n, 0.1, GradAfterUpdate::kept);
  cpu::sgd_update<T>(p_zero.data(), g_zero.data(), n, 0.1, GradAfterUpdate::zeroed);
  EXPECT_EQ(p_zero, p_kept);
  EXPECT_EQ(g_kept, grad);
  EXPECT_EQ(g_zero, zeros);
}

TEST(CpuKernelsMemory, AllocIsAlignedAndCopiesRoundTrip) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}}) {
    void* p = cpu::device_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes << " bytes";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes << " bytes";
    cpu::device_free(p);
  }
  const size_t n = 257;
  std::vector<double> host(n), back(n, -1.0);
  for (size_t i = 0; i < n; ++i) host[i] = 0.5 * static_cast<double>(i) + 1.0;
  void* a = cpu::device_alloc(n * sizeof(double));
  void* b = cpu::device_alloc(n * sizeof(double));
  cpu::copy_to_device(a, host.data(), n * sizeof(double));
  cpu::copy_on_device(b, a, n * sizeof(double));
  cpu::fill_zero(a, n * sizeof(double));
  cpu::synchronize();
  cpu::copy_to_host(back.data(), b, n * sizeof(double));
  EXPECT_EQ(back, host);
  cpu::copy_to_host(back.data(), a, n * sizeof(double));
  EXPECT_EQ(back, std::vector<double>(n, 0.0));
  cpu::device_free(a);
  cpu::device_free(b);
}

// A ZeRO-2 bucket's pattern: made, something small made while it lives (and kept), freed, made
// again next step. The freed block must serve the next request of its size, or the heap grows
// by the bucket every step (it did, with aligned_alloc) and every step faults new pages in.
TEST(CpuKernelsMemory, ABlockFreedServesTheNextRequestOfItsSize) {
  const size_t bucket = (25u << 20) + 4096;
  std::vector<void*> small;
  std::vector<uintptr_t> addresses;
  for (int step = 0; step < 8; ++step) {
    void* p = cpu::device_alloc(bucket);
    small.push_back(cpu::device_alloc(256));
    addresses.push_back(reinterpret_cast<uintptr_t>(p));
    cpu::device_free(p);
  }
  for (void* p : small) cpu::device_free(p);
  // The first step or two may settle where the block lives; after that it stays put.
  for (size_t i = 3; i < addresses.size(); ++i)
    EXPECT_EQ(addresses[i], addresses[2]) << "step " << i << ": the block moved";
}

// Overlaps a GPU would get wrong are refused by the CPU twin too (kernels/aliasing.h).
TEST(CpuKernelsAliasing, OverlapsTheGpuCannotHonourAreRefused) {
  std::vector<double> buf(64, 1.0), stats(8, 1.0), params(8, 1.0);
  double* d = buf.data();
  EXPECT_THROW(cpu::copy_on_device(d + 1, d, 16 * sizeof(double)), std::invalid_argument);
  EXPECT_NO_THROW(cpu::copy_on_device(d, d, 16 * sizeof(double)));
  EXPECT_NO_THROW(cpu::copy_on_device(d + 16, d, 16 * sizeof(double)));
  // dx on dy, dx on x: refused; separate buffers: fine.
  EXPECT_THROW(cpu::layernorm_backward<double>(d, params.data(), params.data(), d, d + 32,
                                               stats.data(), stats.data(), params.data(), 4, 8,
                                               false),
               std::invalid_argument);
  EXPECT_THROW(cpu::layernorm_backward<double>(d + 4, params.data(), params.data(), d + 32, d,
                                               stats.data(), stats.data(), params.data(), 4, 8,
                                               false),
               std::invalid_argument);
  std::vector<double> dx(32);
  EXPECT_NO_THROW(cpu::layernorm_backward<double>(dx.data(), params.data(), params.data(), d,
                                                  d + 32, stats.data(), stats.data(),
                                                  params.data(), 4, 8, false));
}

}  // namespace
}  // namespace mlps
