// Every CPU kernel, in float and double, against the naive fp64 reference on seeded random
// inputs. Tolerances are normwise (see ref::all_close): 1e-12 for double, 1e-5 for float.
#include <gtest/gtest.h>

#include <stdexcept>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

using ref::GemmCase;
using ref::Vec;

template <typename T>
class CpuKernelsTest : public ref::KernelTest<T> {};
TYPED_TEST_SUITE(CpuKernelsTest, ref::KernelTypes);

// Runs one GEMM case through cpu::gemm<T> and the reference on the same (T-rounded) inputs.
template <typename T>
void check_gemm(const GemmCase& g, uint64_t seed) {
  const int64_t lda = g.a_cols() + g.pad, ldb = g.b_cols() + g.pad, ldc = g.n + g.pad;
  const Vec a = ref::rounded_to<T>(ref::random_values(g.a_rows() * lda, seed));
  const Vec b = ref::rounded_to<T>(ref::random_values(g.b_rows() * ldb, seed + 1));
  Vec c = ref::rounded_to<T>(ref::random_values(g.m * ldc, seed + 2));
  std::vector<T> c_kernel = ref::cast_to<T>(c);
  if (g.beta == 0.0)  // beta = 0 must overwrite C without reading it
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) c_kernel[i * ldc + j] = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> a_t = ref::cast_to<T>(a), b_t = ref::cast_to<T>(b);
  cpu::gemm<T>(g.trans_a, g.trans_b, g.m, g.n, g.k, static_cast<T>(g.alpha), a_t.data(), lda,
               b_t.data(), ldb, static_cast<T>(g.beta), c_kernel.data(), ldc);
  ref::gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a, lda, b, ldb, g.beta, c, ldc);
  EXPECT_TRUE(ref::all_close(c_kernel, c, ref::tolerance<T>(), "C")) << g;
}

TYPED_TEST(CpuKernelsTest, GemmAllTransposesAndLeadingDimensions) {
  uint64_t seed = 100;
  for (const GemmCase& g : ref::gemm_sweep()) check_gemm<TypeParam>(g, seed++);
  check_gemm<TypeParam>({false, false, 1, 64, 300, 0, 1.0, 1.0}, seed++);  // long k, one row
}

TYPED_TEST(CpuKernelsTest, GemmWithEmptyInnerDimensionScalesC) {
  using T = TypeParam;
  const Vec c0 = ref::random_values(4 * 3, 7);
  std::vector<T> c = ref::cast_to<T>(c0);
  const std::vector<T> none(1);
  cpu::gemm<T>(false, true, 4, 3, 0, T(1), none.data(), 0, none.data(), 0, T(0.5), c.data(), 3);
  Vec want = ref::rounded_to<T>(c0);
  for (double& x : want) x *= 0.5;
  EXPECT_TRUE(ref::all_close(c, want, this->tol, "C"));
}

TYPED_TEST(CpuKernelsTest, BiasAdd) {
  using T = TypeParam;
  const int64_t rows = 13, cols = 70;
  Vec y = ref::rounded_to<T>(ref::random_values(rows * cols, 1));
  const Vec bias = ref::rounded_to<T>(ref::random_values(cols, 2));
  std::vector<T> y_t = ref::cast_to<T>(y);
  const std::vector<T> bias_t = ref::cast_to<T>(bias);
  cpu::bias_add<T>(y_t.data(), bias_t.data(), rows, cols);
  ref::bias_add(y, bias, rows, cols);
  EXPECT_TRUE(ref::all_close(y_t, y, this->tol, "y"));
}

TYPED_TEST(CpuKernelsTest, BiasGradOverwritesAndAccumulates) {
  using T = TypeParam;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{13, 70}, {32, 8192}, {0, 5}}) {
    const Vec dy = ref::rounded_to<T>(ref::random_values(rows * cols, 3));
    const std::vector<T> dy_t = ref::cast_to<T>(dy);
    for (bool accumulate : {false, true}) {
      Vec dbias = ref::rounded_to<T>(ref::random_values(cols, 4));
      std::vector<T> dbias_t = ref::cast_to<T>(dbias);
      cpu::bias_grad<T>(dbias_t.data(), dy_t.data(), rows, cols, accumulate);
      ref::bias_grad(dbias, dy, rows, cols, accumulate);
      EXPECT_TRUE(ref::all_close(dbias_t, dbias, this->tol, "dbias"))
          << rows << "x" << cols << " accumulate=" << accumulate;
    }
  }
}

TYPED_TEST(CpuKernelsTest, ReluForwardOutOfPlaceAndInPlace) {
  using T = TypeParam;
  const int64_t n = 1001;
  const Vec x = ref::rounded_to<T>(ref::relu_inputs(n, 5));
  const Vec want = ref::relu_forward(x);
  std::vector<T> x_t = ref::cast_to<T>(x), y_t(n);
  cpu::relu_forward<T>(y_t.data(), x_t.data(), n);
  EXPECT_TRUE(ref::all_close(y_t, want, 0.0, "y"));
  cpu::relu_forward<T>(x_t.data(), x_t.data(), n);
  EXPECT_TRUE(ref::all_close(x_t, want, 0.0, "y aliasing x"));
}

TYPED_TEST(CpuKernelsTest, ReluBackwardOutOfPlaceAndInPlace) {
  using T = TypeParam;
  const int64_t n = 1001;
  const Vec y = ref::relu_forward(ref::rounded_to<T>(ref::relu_inputs(n, 6)));
  const Vec dy = ref::rounded_to<T>(ref::random_values(n, 7));
  const Vec want = ref::relu_backward(dy, y);
  const std::vector<T> y_t = ref::cast_to<T>(y);
  std::vector<T> dy_t = ref::cast_to<T>(dy), dx_t(n);
  cpu::relu_backward<T>(dx_t.data(), dy_t.data(), y_t.data(), n);
  EXPECT_TRUE(ref::all_close(dx_t, want, 0.0, "dx"));
  cpu::relu_backward<T>(dy_t.data(), dy_t.data(), y_t.data(), n);
  EXPECT_TRUE(ref::all_close(dy_t, want, 0.0, "dx aliasing dy"));
}

TYPED_TEST(CpuKernelsTest, ResidualAddOutOfPlaceAndAliasingEitherInput) {
  using T = TypeParam;
  const int64_t n = 999;
  const Vec a = ref::rounded_to<T>(ref::random_values(n, 8));
  const Vec b = ref::rounded_to<T>(ref::random_values(n, 9));
  const Vec want = ref::residual_add(a, b);
  const std::vector<T> a_t = ref::cast_to<T>(a), b_t = ref::cast_to<T>(b);
  std::vector<T> y(n);
  cpu::residual_add<T>(y.data(), a_t.data(), b_t.data(), n);
  EXPECT_TRUE(ref::all_close(y, want, this->tol, "y"));
  std::vector<T> ya = a_t;
  cpu::residual_add<T>(ya.data(), ya.data(), b_t.data(), n);
  EXPECT_TRUE(ref::all_close(ya, want, this->tol, "y aliasing a"));
  std::vector<T> yb = b_t;
  cpu::residual_add<T>(yb.data(), a_t.data(), yb.data(), n);
  EXPECT_TRUE(ref::all_close(yb, want, this->tol, "y aliasing b"));
}

struct LayerNormCase {
  int64_t rows, cols;
  double offset;  // added to x: a large mean with a small spread tests the variance's stability
  double spread;
};

TYPED_TEST(CpuKernelsTest, LayerNormForward) {
  using T = TypeParam;
  const double eps = 1e-5;
  const LayerNormCase cases[] = {{5, 33, 0.0, 1.0}, {32, 8192, 0.5, 2.0}, {4, 100, 100.0, 0.01},
                                 {3, 1, 0.0, 1.0}};
  for (const LayerNormCase& lc : cases) {
    const int64_t rows = lc.rows, cols = lc.cols;
    Vec x = ref::random_values(rows * cols, 10, lc.offset - lc.spread, lc.offset + lc.spread);
    x = ref::rounded_to<T>(x);
    const Vec gamma = ref::rounded_to<T>(ref::random_values(cols, 11, 0.5, 1.5));
    const Vec beta = ref::rounded_to<T>(ref::random_values(cols, 12));
    Vec y(rows * cols), mean(rows), rstd(rows);
    ref::layernorm_forward(y, mean, rstd, x, gamma, beta, rows, cols, eps);
    const std::vector<T> x_t = ref::cast_to<T>(x), gamma_t = ref::cast_to<T>(gamma),
                         beta_t = ref::cast_to<T>(beta);
    std::vector<T> y_t(rows * cols), mean_t(rows), rstd_t(rows);
    cpu::layernorm_forward<T>(y_t.data(), mean_t.data(), rstd_t.data(), x_t.data(),
                              gamma_t.data(), beta_t.data(), rows, cols, eps);
    const std::string shape = ref::dims(rows, cols);
    // x − mean loses log10(offset/spread) digits in any fp64 evaluation, the reference's too.
    const double tol = this->tol + 1e-15 * lc.offset / lc.spread;
    EXPECT_TRUE(ref::all_close(y_t, y, tol, "y " + shape));
    EXPECT_TRUE(ref::all_close(mean_t, mean, tol, "mean " + shape));
    EXPECT_TRUE(ref::all_close(rstd_t, rstd, tol, "rstd " + shape));
  }
}

TYPED_TEST(CpuKernelsTest, LayerNormBackwardOverwritesAndAccumulates) {
  using T = TypeParam;
  const int64_t rows = 6, cols = 40;
  const Vec x = ref::rounded_to<T>(ref::random_values(rows * cols, 20, -2.0, 3.0));
  const Vec gamma = ref::rounded_to<T>(ref::random_values(cols, 21, 0.5, 1.5));
  const Vec beta = ref::random_values(cols, 22);
  const Vec dy = ref::rounded_to<T>(ref::random_values(rows * cols, 23));
  // The saved statistics come from the kernel's forward, in T, as in training.
  const std::vector<T> x_t = ref::cast_to<T>(x), gamma_t = ref::cast_to<T>(gamma),
                       beta_t = ref::cast_to<T>(beta), dy_t = ref::cast_to<T>(dy);
  std::vector<T> y_t(rows * cols), mean_t(rows), rstd_t(rows);
  cpu::layernorm_forward<T>(y_t.data(), mean_t.data(), rstd_t.data(), x_t.data(), gamma_t.data(),
                            beta_t.data(), rows, cols, 1e-5);
  const Vec mean = ref::to_double(mean_t), rstd = ref::to_double(rstd_t);
  for (bool accumulate : {false, true}) {
    Vec dx(rows * cols), dgamma = ref::rounded_to<T>(ref::random_values(cols, 24)),
                         dbeta = ref::rounded_to<T>(ref::random_values(cols, 25));
    std::vector<T> dx_t(rows * cols), dgamma_t = ref::cast_to<T>(dgamma),
                                      dbeta_t = ref::cast_to<T>(dbeta);
    cpu::layernorm_backward<T>(dx_t.data(), dgamma_t.data(), dbeta_t.data(), dy_t.data(),
                               x_t.data(), mean_t.data(), rstd_t.data(), gamma_t.data(), rows,
                               cols, accumulate);
    ref::layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols, accumulate);
    const std::string mode = accumulate ? "accumulate" : "overwrite";
    EXPECT_TRUE(ref::all_close(dx_t, dx, this->tol, "dx " + mode));
    EXPECT_TRUE(ref::all_close(dgamma_t, dgamma, this->tol, "dgamma " + mode));
    EXPECT_TRUE(ref::all_close(dbeta_t, dbeta, this->tol, "dbeta " + mode));
  }
}

// The backward pass against central differences of the forward pass, for the loss
// L = Σ w ⊙ layernorm(x) (so dy = w), in double.
TEST(CpuKernelsFiniteDifference, LayerNormBackwardMatchesCentralDifferences) {
  const int64_t rows = 3, cols = 7;
  const double eps = 1e-5, h = 1e-6;
  Vec x = ref::random_values(rows * cols, 30, -1.0, 2.0);
  Vec gamma = ref::random_values(cols, 31, 0.5, 1.5);
  Vec beta = ref::random_values(cols, 32);
  const Vec w = ref::random_values(rows * cols, 33);
  auto loss = [&]() {
    Vec y(rows * cols), mean(rows), rstd(rows);
    cpu::layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                   beta.data(), rows, cols, eps);
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += w[i] * y[i];
    return sum;
  };
  auto central_difference = [&](Vec& v) {
    Vec grad(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double saved = v[i];
      v[i] = saved + h;
      const double plus = loss();
      v[i] = saved - h;
      const double minus = loss();
      v[i] = saved;
      grad[i] = (plus - minus) / (2 * h);
    }
    return grad;
  };
  Vec y(rows * cols), mean(rows), rstd(rows);
  cpu::layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                 beta.data(), rows, cols, eps);
  Vec dx(rows * cols), dgamma(cols), dbeta(cols);
  cpu::layernorm_backward<double>(dx.data(), dgamma.data(), dbeta.data(), w.data(), x.data(),
                                  mean.data(), rstd.data(), gamma.data(), rows, cols, false);
  // Truncation error O(h²) and rounding O(1e-16/h) both stay well below 1e-7.
  EXPECT_TRUE(ref::all_close(dx, central_difference(x), 1e-7, "dx"));
  EXPECT_TRUE(ref::all_close(dgamma, central_difference(gamma), 1e-7, "dgamma"));
  EXPECT_TRUE(ref::all_close(dbeta, central_difference(beta), 1e-7, "dbeta"));
}

TYPED_TEST(CpuKernelsTest, SoftmaxXentForward) {
  using T = TypeParam;
  // (rows, classes, logit offset): the large offset overflows exp() without the max shift.
  struct Case { int64_t rows, classes; double offset; };
  for (const Case& sc : {Case{9, 10, 0.0}, Case{4, 1000, 0.0}, Case{5, 10, 1000.0}}) {
    const int64_t rows = sc.rows, classes = sc.classes;
    const Vec logits =
        ref::rounded_to<T>(ref::random_values(rows * classes, 40, sc.offset - 5, sc.offset + 5));
    const std::vector<int32_t> labels = ref::random_labels(rows, classes, 41);
    Vec probs(rows * classes), loss(rows);
    ref::softmax_xent_forward(probs, loss, logits, labels, rows, classes);
    const std::vector<T> logits_t = ref::cast_to<T>(logits);
    std::vector<T> probs_t(rows * classes), loss_t(rows);
    cpu::softmax_xent_forward<T>(probs_t.data(), loss_t.data(), logits_t.data(), labels.data(),
                                 rows, classes);
    const std::string shape = ref::dims(rows, classes);
    EXPECT_TRUE(ref::all_close(probs_t, probs, this->tol, "probs " + shape));
    EXPECT_TRUE(ref::all_close(loss_t, loss, this->tol, "loss " + shape));
  }
}

TYPED_TEST(CpuKernelsTest, SoftmaxXentForwardGivesNanLossForLabelOutOfRange) {
  using T = TypeParam;
  const std::vector<T> logits = ref::cast_to<T>(ref::random_values(2 * 3, 42));
  const std::vector<int32_t> labels = {3, -1};
  std::vector<T> probs(6), loss(2);
  cpu::softmax_xent_forward<T>(probs.data(), loss.data(), logits.data(), labels.data(), 2, 3);
  EXPECT_TRUE(std::isnan(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
}

TYPED_TEST(CpuKernelsTest, SoftmaxXentBackward) {
  using T = TypeParam;
  const int64_t rows = 9, classes = 10;
  const double scale = 1.0 / 32;
  Vec probs(rows * classes), loss(rows);
  const Vec logits = ref::random_values(rows * classes, 43, -3.0, 3.0);
  const std::vector<int32_t> labels = ref::random_labels(rows, classes, 44);
  ref::softmax_xent_forward(probs, loss, logits, labels, rows, classes);
  probs = ref::rounded_to<T>(probs);
  const Vec want = ref::softmax_xent_backward(probs, labels, rows, classes, scale);
  const std::vector<T> probs_t = ref::cast_to<T>(probs);
  std::vector<T> dlogits(rows * classes);
  cpu::softmax_xent_backward<T>(dlogits.data(), probs_t.data(), labels.data(), rows, classes,
                                scale);
  EXPECT_TRUE(ref::all_close(dlogits, want, this->tol, "dlogits"));
}

}  // namespace
}  // namespace mlps
