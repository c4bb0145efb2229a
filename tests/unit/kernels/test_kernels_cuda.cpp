// Every CUDA kernel, in float and double, against its CPU twin on the same seeded random
// inputs (normwise tolerance 1e-12 for double, 1e-5 for float; ReLU exactly). Without a GPU, or
// in a build without CUDA, every test here is skipped visibly, naming the kernel it did not check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"
#include "tests/reference_kernels.h"


namespace mlps {
namespace {

template <typename T>
class CudaKernelsTest : public ref::KernelTest<T> {};
TYPED_TEST_SUITE(CudaKernelsTest, ref::KernelTypes);

#ifdef MLPSCALE_WITH_CUDA

using ref::GemmCase;
using namespace cuda_test;

template <typename T>
void check_gemm(const GemmCase& g, uint64_t seed) {
  const int64_t lda = std::max<int64_t>(g.a_cols() + g.pad, 1);
  const int64_t ldb = std::max<int64_t>(g.b_cols() + g.pad, 1);
  const int64_t ldc = g.n + g.pad;
  const std::vector<T> a = random_t<T>(std::max<int64_t>(g.a_rows() * lda, 1), seed);
  const std::vector<T> b = random_t<T>(std::max<int64_t>(g.b_rows() * ldb, 1), seed + 1);
  std::vector<T> c = random_t<T>(g.m * ldc, seed + 2);
  GpuArray<T> a_d(a), b_d(b), c_d(c);
  cuda::gemm<T>(g.trans_a, g.trans_b, g.m, g.n, g.k, T(g.alpha), a_d.get(), lda, b_d.get(), ldb,
                T(g.beta), c_d.get(), ldc);
  cpu::gemm<T>(g.trans_a, g.trans_b, g.m, g.n, g.k, T(g.alpha), a.data(), lda, b.data(), ldb,
               T(g.beta), c.data(), ldc);
  EXPECT_TRUE(matches_cpu(c_d.host(), c, "C")) << g;
}

#endif  // MLPSCALE_WITH_CUDA

TYPED_TEST(CudaKernelsTest, Gemm) {
  MLPS_REQUIRE_GPU("gemm");
#ifdef MLPSCALE_WITH_CUDA
  uint64_t seed = 100;
  for (const GemmCase& g : ref::gemm_sweep()) check_gemm<TypeParam>(g, seed++);
  check_gemm<TypeParam>({false, false, 1, 64, 300, 0, 1.0, 1.0}, seed++);
  check_gemm<TypeParam>({true, false, 256, 512, 128, 0, 1.0, 0.0}, seed++);
  check_gemm<TypeParam>({false, true, 4, 3, 0, 0, 1.0, 0.5}, seed++);  // k = 0: C = beta·C
#endif
}

TYPED_TEST(CudaKernelsTest, BiasAdd) {
  MLPS_REQUIRE_GPU("bias_add");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t rows = 13, cols = 70;
  std::vector<T> y = random_t<T>(rows * cols, 1);
  const std::vector<T> bias = random_t<T>(cols, 2);
  GpuArray<T> y_d(y), bias_d(bias);
  cuda::bias_add<T>(y_d.get(), bias_d.get(), rows, cols);
  cpu::bias_add<T>(y.data(), bias.data(), rows, cols);
  EXPECT_TRUE(matches_cpu(y_d.host(), y, "y"));
#endif
}

TYPED_TEST(CudaKernelsTest, BiasGrad) {
  MLPS_REQUIRE_GPU("bias_grad");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{13, 70}, {32, 8192}, {1000, 10}, {0, 5}}) {
    const std::vector<T> dy = random_t<T>(std::max<int64_t>(rows * cols, 1), 3);
    GpuArray<T> dy_d(dy);
    for (bool accumulate : {false, true}) {
      std::vector<T> dbias = random_t<T>(cols, 4);
      GpuArray<T> dbias_d(dbias);
      cuda::bias_grad<T>(dbias_d.get(), dy_d.get(), rows, cols, accumulate);
      cpu::bias_grad<T>(dbias.data(), dy.data(), rows, cols, accumulate);
      EXPECT_TRUE(matches_cpu(dbias_d.host(), dbias, "dbias"))
          << rows << "x" << cols << " accumulate=" << accumulate;
    }
  }
#endif
}

TYPED_TEST(CudaKernelsTest, ReluForward) {
  MLPS_REQUIRE_GPU("relu_forward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 100003;
  const std::vector<T> x = ref::cast_to<T>(ref::relu_inputs(n, 5));
  std::vector<T> y(n);
  GpuArray<T> x_d(x), y_d(y);
  cuda::relu_forward<T>(y_d.get(), x_d.get(), n);
  cuda::relu_forward<T>(x_d.get(), x_d.get(), n);  // in place
  cpu::relu_forward<T>(y.data(), x.data(), n);
  EXPECT_TRUE(matches_cpu(y_d.host(), y, "y", 0.0));
  EXPECT_TRUE(matches_cpu(x_d.host(), y, "y aliasing x", 0.0));
#endif
}

TYPED_TEST(CudaKernelsTest, ReluBackward) {
  MLPS_REQUIRE_GPU("relu_backward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 100003;
  std::vector<T> y = ref::cast_to<T>(ref::relu_inputs(n, 6));
  cpu::relu_forward<T>(y.data(), y.data(), n);
  const std::vector<T> dy = random_t<T>(n, 7);
  std::vector<T> dx(n);
  GpuArray<T> y_d(y), dy_d(dy), dx_d(dx);
  cuda::relu_backward<T>(dx_d.get(), dy_d.get(), y_d.get(), n);
  cuda::relu_backward<T>(dy_d.get(), dy_d.get(), y_d.get(), n);  // in place
  cpu::relu_backward<T>(dx.data(), dy.data(), y.data(), n);
  EXPECT_TRUE(matches_cpu(dx_d.host(), dx, "dx", 0.0));
  EXPECT_TRUE(matches_cpu(dy_d.host(), dx, "dx aliasing dy", 0.0));
#endif
}

TYPED_TEST(CudaKernelsTest, ResidualAdd) {
  MLPS_REQUIRE_GPU("residual_add");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 99999;
  const std::vector<T> a = random_t<T>(n, 8), b = random_t<T>(n, 9);
  std::vector<T> y(n);
  GpuArray<T> a_d(a), b_d(b), y_d(y), ya_d(a), yb_d(b);
  cuda::residual_add<T>(y_d.get(), a_d.get(), b_d.get(), n);
  cuda::residual_add<T>(ya_d.get(), ya_d.get(), b_d.get(), n);
  cuda::residual_add<T>(yb_d.get(), a_d.get(), yb_d.get(), n);
  cpu::residual_add<T>(y.data(), a.data(), b.data(), n);
  EXPECT_TRUE(matches_cpu(y_d.host(), y, "y"));
  EXPECT_TRUE(matches_cpu(ya_d.host(), y, "y aliasing a"));
  EXPECT_TRUE(matches_cpu(yb_d.host(), y, "y aliasing b"));
#endif
}

TYPED_TEST(CudaKernelsTest, LayerNormForward) {
  MLPS_REQUIRE_GPU("layernorm_forward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{5, 33}, {32, 8192}, {7, 1000}, {3, 1}, {2000, 64}}) {
    const std::vector<T> x = random_t<T>(rows * cols, 10, -1.5, 2.5);
    const std::vector<T> gamma = random_t<T>(cols, 11, 0.5, 1.5), beta = random_t<T>(cols, 12);
    std::vector<T> y(rows * cols), mean(rows), rstd(rows);
    GpuArray<T> x_d(x), gamma_d(gamma), beta_d(beta), y_d(y), mean_d(mean), rstd_d(rstd);
    cuda::layernorm_forward<T>(y_d.get(), mean_d.get(), rstd_d.get(), x_d.get(), gamma_d.get(),
                               beta_d.get(), rows, cols, 1e-5);
    cpu::layernorm_forward<T>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                              beta.data(), rows, cols, 1e-5);
    const std::string shape = ref::dims(rows, cols);
    EXPECT_TRUE(matches_cpu(y_d.host(), y, "y " + shape));
    EXPECT_TRUE(matches_cpu(mean_d.host(), mean, "mean " + shape));
    EXPECT_TRUE(matches_cpu(rstd_d.host(), rstd, "rstd " + shape));
  }
#endif
}

TYPED_TEST(CudaKernelsTest, LayerNormBackward) {
  MLPS_REQUIRE_GPU("layernorm_backward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{6, 40}, {32, 8192}, {300, 10}}) {
    const std::vector<T> x = random_t<T>(rows * cols, 20, -2.0, 3.0);
    const std::vector<T> gamma = random_t<T>(cols, 21, 0.5, 1.5), beta = random_t<T>(cols, 22);
    const std::vector<T> dy = random_t<T>(rows * cols, 23);
    std::vector<T> y(rows * cols), mean(rows), rstd(rows);
    cpu::layernorm_forward<T>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                              beta.data(), rows, cols, 1e-5);
    GpuArray<T> x_d(x), gamma_d(gamma), dy_d(dy), mean_d(mean), rstd_d(rstd);
    for (bool accumulate : {false, true}) {
      std::vector<T> dx(rows * cols);
      std::vector<T> dgamma = random_t<T>(cols, 24), dbeta = random_t<T>(cols, 25);
      GpuArray<T> dx_d(dx), dgamma_d(dgamma), dbeta_d(dbeta);
      cuda::layernorm_backward<T>(dx_d.get(), dgamma_d.get(), dbeta_d.get(), dy_d.get(), x_d.get(),
                                  mean_d.get(), rstd_d.get(), gamma_d.get(), rows, cols,
                                  accumulate);
      cpu::layernorm_backward<T>(dx.data(), dgamma.data(), dbeta.data(), dy.data(), x.data(),
                                 mean.data(), rstd.data(), gamma.data(), rows, cols, accumulate);
      const std::string what = ref::dims(rows, cols) + (accumulate ? " accumulate" : "");
      EXPECT_TRUE(matches_cpu(dx_d.host(), dx, "dx " + what));
      EXPECT_TRUE(matches_cpu(dgamma_d.host(), dgamma, "dgamma " + what));
      EXPECT_TRUE(matches_cpu(dbeta_d.host(), dbeta, "dbeta " + what));
    }
  }
#endif
}

TYPED_TEST(CudaKernelsTest, SoftmaxXentForward) {
  MLPS_REQUIRE_GPU("softmax_xent_forward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  struct Case { int64_t rows, classes; double offset; };
  for (const Case& sc : {Case{9, 10, 0.0}, Case{4, 1000, 0.0}, Case{5, 10, 1000.0}}) {
    const int64_t rows = sc.rows, classes = sc.classes;
    const std::vector<T> logits =
        random_t<T>(rows * classes, 40, sc.offset - 5, sc.offset + 5);
    std::vector<int32_t> labels = ref::random_labels(rows, classes, 41);
    labels[0] = static_cast<int32_t>(classes);  // out of range: NaN loss on both
    std::vector<T> probs(rows * classes), loss(rows);
    GpuArray<T> logits_d(logits), probs_d(probs), loss_d(loss);
    GpuArray<int32_t> labels_d(labels);
    cuda::softmax_xent_forward<T>(probs_d.get(), loss_d.get(), logits_d.get(), labels_d.get(),
                                  rows, classes);
    cpu::softmax_xent_forward<T>(probs.data(), loss.data(), logits.data(), labels.data(), rows,
                                 classes);
    const std::string shape = ref::dims(rows, classes);
    EXPECT_TRUE(matches_cpu(probs_d.host(), probs, "probs " + shape));
    std::vector<T> loss_gpu = loss_d.host();
    EXPECT_TRUE(std::isnan(loss_gpu[0])) << "label out of range, " << shape;
    loss_gpu[0] = loss[0] = T(0);
    EXPECT_TRUE(matches_cpu(loss_gpu, loss, "loss " + shape));
  }
#endif
}

TYPED_TEST(CudaKernelsTest, SoftmaxXentBackward) {
  MLPS_REQUIRE_GPU("softmax_xent_backward");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t rows = 33, classes = 10;
  const std::vector<T> probs = random_t<T>(rows * classes, 43, 0.0, 1.0);
  const std::vector<int32_t> labels = ref::random_labels(rows, classes, 44);
  std::vector<T> dlogits(rows * classes);
  GpuArray<T> probs_d(probs), dlogits_d(dlogits);
  GpuArray<int32_t> labels_d(labels);
  cuda::softmax_xent_backward<T>(dlogits_d.get(), probs_d.get(), labels_d.get(), rows, classes,
                                 1.0 / 32);
  cpu::softmax_xent_backward<T>(dlogits.data(), probs.data(), labels.data(), rows, classes,
                                1.0 / 32);
  EXPECT_TRUE(matches_cpu(dlogits_d.host(), dlogits, "dlogits"));
#endif
}

}  // namespace
}  // namespace mlps
