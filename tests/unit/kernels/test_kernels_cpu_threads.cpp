// The CPU kernels split their loops across the rank's threads and run code built for the node's
// widest vectors: their results must not depend on either. Each kernel runs at sizes past the
// threading threshold with 1, 2 and 3 threads and must give the same bits; the optimizers must
// give the single-thread reference's bits, and a beta = 0 GEMM OpenBLAS's own at that count.
#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/reference_optimizer.h"
#include "kernels/kernels.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

// Runs f with the rank's thread count set to `threads`, then restores it.
void with_threads(int threads, const std::function<void()>& f) {
  const int before = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  f();
  openblas_set_num_threads(before);
}

template <typename T>
std::vector<T> random_tensor(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return ref::cast_to<T>(ref::random_values(static_cast<size_t>(n), seed, lo, hi));
}

// The outputs of `run` (which fills the vectors it is given from the same inputs each time) at
// each thread count, compared bit for bit with the single-thread ones.
template <typename T>
void expect_same_bits_at_any_thread_count(
    int outputs, const std::function<void(std::vector<std::vector<T>>&)>& run) {
  std::vector<std::vector<T>> first(static_cast<size_t>(outputs));
  with_threads(1, [&] { run(first); });
  for (int threads : {2, 3}) {
    std::vector<std::vector<T>> again(static_cast<size_t>(outputs));
    with_threads(threads, [&] { run(again); });
    for (size_t o = 0; o < first.size(); ++o) {
      ASSERT_EQ(again[o].size(), first[o].size());
      EXPECT_EQ(std::memcmp(again[o].data(), first[o].data(), first[o].size() * sizeof(T)), 0)
          << "output " << o << " differs at " << threads << " threads";
    }
  }
}

// The kernels thread only beside OpenBLAS's OpenMP build (kernels/cpu/parallel_loops.h).
#define SKIP_UNLESS_THREADED()                                                          \
  if (openblas_get_parallel() != 2)                                                     \
  GTEST_SKIP() << "OpenBLAS is not its OpenMP build, so the CPU kernels run on one thread " \
                  "and there is no thread count to vary (make deps installs that build)"

template <typename T>
class CpuThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_UNLESS_THREADED(); }
};
TYPED_TEST_SUITE(CpuThreadsTest, ref::KernelTypes);

// Past the threshold (2^15 elements per thread), and not a multiple of any chunk alignment.
constexpr int64_t kRows = 37, kCols = 4099, kN = kRows * kCols;

TYPED_TEST(CpuThreadsTest, AdamAndSgdGiveTheReferenceBitsAtAnyThreadCount) {
  using T = TypeParam;
  for (double grad_scale : {1.0, 0.25}) {
    AdamStep step;
    step.lr = 0.01;
    step.bias_correction1 = 1.0 - 0.9 * 0.9;
    step.bias_correction2 = 1.0 - 0.999 * 0.999;
    step.grad_scale = grad_scale;
    std::vector<T> g = random_tensor<T>(kN, 2);  // kept by every call but the zeroing ones
    std::vector<T> p = random_tensor<T>(kN, 1), m = random_tensor<T>(kN, 3, -0.1, 0.1),
                   v = random_tensor<T>(kN, 4, 0.0, 0.01);
    std::vector<T> p_ref = p, m_ref = m, v_ref = v, sgd_ref = p;
    cpu::reference::adam_update<T>(p_ref.data(), g.data(), m_ref.data(), v_ref.data(), kN, step);
    cpu::reference::sgd_update<T>(sgd_ref.data(), g.data(), kN, 0.1);
    for (int threads : {1, 2, 3}) {
      std::vector<T> pt = p, mt = m, vt = v, sgd = p, pz = p, mz = m, vz = v, gz = g;
      with_threads(threads, [&] {
        cpu::adam_update<T>(pt.data(), g.data(), mt.data(), vt.data(), kN, step);
        cpu::sgd_update<T>(sgd.data(), g.data(), kN, 0.1);
        cpu::adam_update<T>(pz.data(), gz.data(), mz.data(), vz.data(), kN, step,
                            GradAfterUpdate::zeroed);
      });
      EXPECT_EQ(pt, p_ref) << threads << " threads, grad scale " << grad_scale;
      EXPECT_EQ(mt, m_ref) << threads << " threads";
      EXPECT_EQ(vt, v_ref) << threads << " threads";
      EXPECT_EQ(sgd, sgd_ref) << threads << " threads";
      EXPECT_EQ(pz, p_ref) << threads << " threads, gradient zeroed";
      EXPECT_EQ(mz, m_ref) << threads << " threads, gradient zeroed";
      EXPECT_EQ(vz, v_ref) << threads << " threads, gradient zeroed";
      EXPECT_EQ(gz, std::vector<T>(kN, T(0))) << threads << " threads";
    }
  }
}

TYPED_TEST(CpuThreadsTest, ElementwiseKernelsGiveTheSameBitsAtAnyThreadCount) {
  using T = TypeParam;
  const std::vector<T> x = random_tensor<T>(kN, 10), dy = random_tensor<T>(kN, 11),
                       bias = random_tensor<T>(kCols, 12);
  expect_same_bits_at_any_thread_count<T>(6, [&](std::vector<std::vector<T>>& out) {
    out[0] = x;
    cpu::bias_add<T>(out[0].data(), bias.data(), kRows, kCols);
    out[1] = bias;  // accumulating onto a non-zero gradient
    cpu::bias_grad<T>(out[1].data(), dy.data(), kRows, kCols, true);
    out[2].assign(kN, T(0));
    cpu::relu_forward<T>(out[2].data(), x.data(), kN);
    out[3].assign(kN, T(0));
    cpu::relu_backward<T>(out[3].data(), dy.data(), x.data(), kN);
    out[4].assign(kN, T(0));
    cpu::residual_add<T>(out[4].data(), x.data(), dy.data(), kN);
    out[5].assign(kN, T(0));
    cpu::copy_on_device(out[5].data(), x.data(), kN * sizeof(T));
  });
}

TYPED_TEST(CpuThreadsTest, LayerNormAndLossGiveTheSameBitsAtAnyThreadCount) {
  using T = TypeParam;
  const std::vector<T> x = random_tensor<T>(kN, 20), dy = random_tensor<T>(kN, 21),
                       gamma = random_tensor<T>(kCols, 22), beta = random_tensor<T>(kCols, 23);
  // Softmax rows: many of them, so that they too are split.
  const int64_t classes = 10, rows = kN / classes;
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = static_cast<int32_t>(r % 10);
  expect_same_bits_at_any_thread_count<T>(8, [&](std::vector<std::vector<T>>& out) {
    out[0].assign(kN, T(0));
    out[1].assign(kRows, T(0));
    out[2].assign(kRows, T(0));
    cpu::layernorm_forward<T>(out[0].data(), out[1].data(), out[2].data(), x.data(),
                              gamma.data(), beta.data(), kRows, kCols, 1e-5);
    out[3].assign(kN, T(0));
    out[4] = gamma;
    out[5] = beta;
    cpu::layernorm_backward<T>(out[3].data(), out[4].data(), out[5].data(), dy.data(), x.data(),
                               out[1].data(), out[2].data(), gamma.data(), kRows, kCols, true);
    out[6].assign(kN, T(0));
    out[7].assign(rows, T(0));
    cpu::softmax_xent_forward<T>(out[6].data(), out[7].data(), x.data(), labels.data(), rows,
                                 classes);
  });
}

TEST(CpuThreadsRounding, SixteenBitStorageGivesTheSameBitsAtAnyThreadCount) {
  SKIP_UNLESS_THREADED();
  const std::vector<float> x = random_tensor<float>(kN, 30, -70000.0, 70000.0);
  expect_same_bits_at_any_thread_count<float>(4, [&](std::vector<std::vector<float>>& out) {
    for (int f = 0; f < 2; ++f) {
      const StorageFormat format = f == 0 ? StorageFormat::bf16 : StorageFormat::fp16;
      out[2 * f] = x;
      cpu::round_to_storage(out[2 * f].data(), kRows, kCols, kCols, format);
      std::vector<uint16_t> wire(static_cast<size_t>(kN));
      cpu::pack_16bit(wire.data(), x.data(), kN, format);
      out[2 * f + 1].assign(kN, 0.0f);
      cpu::unpack_16bit(out[2 * f + 1].data(), wire.data(), kN, format);
    }
  });
}

// cpu::gemm zeroes a large C itself when beta = 0 and asks OpenBLAS for beta = 1: the result must
// be OpenBLAS's own beta = 0 result bit for bit, over a C full of NaN (never read), with C
// contiguous and with padded rows.
TYPED_TEST(CpuThreadsTest, GemmWithBetaZeroGivesOpenBlasBitsAtAnyThreadCount) {
  using T = TypeParam;
  const int64_t m = 300, n = 260, k = 33;
  const std::vector<T> a = random_tensor<T>(m * k, 40), b = random_tensor<T>(k * n, 41);
  for (int64_t ldc : {n, n + 5}) {
    for (int threads : {1, 2, 3}) {  // OpenBLAS's own sums may differ between thread counts
      std::vector<T> expected(static_cast<size_t>(m * ldc), T(0));
      std::vector<T> c(static_cast<size_t>(m * ldc), std::numeric_limits<T>::quiet_NaN());
      for (int64_t r = 0; r < m; ++r)  // the padding is not C's: it must stay as it was
        for (int64_t j = n; j < ldc; ++j) c[static_cast<size_t>(r * ldc + j)] = T(0);
      with_threads(threads, [&] {
        if constexpr (std::is_same_v<T, float>)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k,
                      b.data(), n, 0.0f, expected.data(), ldc);
        else
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a.data(), k,
                      b.data(), n, 0.0, expected.data(), ldc);
        cpu::gemm<T>(false, false, m, n, k, T(1), a.data(), k, b.data(), n, T(0), c.data(), ldc);
      });
      EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * sizeof(T)), 0)
          << threads << " threads, ldc " << ldc;
    }
  }
}

}  // namespace
}  // namespace mlps
