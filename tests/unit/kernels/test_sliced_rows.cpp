// The sliced-row kernels (kernels/sliced_rows.h) that bin/tensor2d's LayerNorm and logit
// layout use. CPU: a row split into q slices, with the cross-slice reductions done here as the
// grid row's collectives do them, must give the fp64 reference LayerNorm (forward and
// backward) for q = 1..4, also for rows far from zero mean; copy_2d copies exactly the
// sub-matrix. CUDA: every kernel against its CPU twin (skipped visibly without a GPU).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/kernels.h"
#include "kernels/sliced_rows.h"
#include "tests/cuda_test_support.h"
#include "tests/reference_kernels.h"

namespace mlps {
namespace {

template <typename T>
class SlicedRowsTest : public ref::KernelTest<T> {};
TYPED_TEST_SUITE(SlicedRowsTest, ref::KernelTypes);

// Columns [p·w, (p+1)·w) of a [rows × cols] matrix.
template <typename T>
std::vector<T> slice(const std::vector<T>& m, int64_t rows, int64_t cols, int64_t p, int64_t w) {
  std::vector<T> out(static_cast<size_t>(rows * w));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < w; ++c) out[r * w + c] = m[r * cols + p * w + c];
  return out;
}

template <typename T>
void check_sliced_layernorm(int64_t rows, int64_t cols, int64_t q, double offset, uint64_t seed) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " q " +
               std::to_string(q) + " offset " + std::to_string(offset));
  const double eps = 1e-5;
  const int64_t w = cols / q;
  const auto x = ref::cast_to<T>(ref::random_values(rows * cols, seed, offset - 1, offset + 1));
  const auto gamma = ref::cast_to<T>(ref::random_values(cols, seed + 1, 0.5, 1.5));
  const auto beta = ref::cast_to<T>(ref::random_values(cols, seed + 2));
  const auto dy = ref::cast_to<T>(ref::random_values(rows * cols, seed + 3));

  // Forward: each slice's moments, "all-gathered" slice after slice, combined on every slice.
  std::vector<T> gathered(static_cast<size_t>(q * rows * 2));
  for (int64_t p = 0; p < q; ++p)
    cpu::row_moments<T>(gathered.data() + p * rows * 2, slice(x, rows, cols, p, w).data(), rows, w);
  std::vector<T> mean(rows), rstd(rows), y(static_cast<size_t>(rows * cols));
  cpu::combine_row_moments<T>(mean.data(), rstd.data(), gathered.data(), q, rows, w, eps);
  // Backward: each slice's row sums, "all-reduced".
  std::vector<T> sums(static_cast<size_t>(rows * 2), T(0)), dx(y.size()), dgamma(cols), dbeta(cols);
  std::vector<std::vector<T>> slice_sums;
  for (int64_t p = 0; p < q; ++p) {
    const auto xs = slice(x, rows, cols, p, w);
    const auto gs = slice(gamma, 1, cols, p, w);
    std::vector<T> ys(static_cast<size_t>(rows * w)), part(static_cast<size_t>(rows * 2));
    cpu::layernorm_apply<T>(ys.data(), xs.data(), mean.data(), rstd.data(), gs.data(),
                            slice(beta, 1, cols, p, w).data(), rows, w);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < w; ++c) y[r * cols + p * w + c] = ys[r * w + c];
    cpu::layernorm_backward_partial<T>(part.data(), dgamma.data() + p * w, dbeta.data() + p * w,
                                       slice(dy, rows, cols, p, w).data(), xs.data(), mean.data(),
                                       rstd.data(), gs.data(), rows, w, false);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += part[i];
  }
  for (int64_t p = 0; p < q; ++p) {
    std::vector<T> dxs(static_cast<size_t>(rows * w));
    cpu::layernorm_backward_apply<T>(dxs.data(), slice(dy, rows, cols, p, w).data(),
                                     slice(x, rows, cols, p, w).data(), mean.data(), rstd.data(),
                                     slice(gamma, 1, cols, p, w).data(), sums.data(), rows, w,
                                     cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < w; ++c) dx[r * cols + p * w + c] = dxs[r * w + c];
  }

  ref::Vec y_ref(y.size()), mean_ref(rows), rstd_ref(rows), dx_ref(y.size()), dgamma_ref(cols),
      dbeta_ref(cols);
  const auto xd = ref::to_double(x), gd = ref::to_double(gamma), dyd = ref::to_double(dy);
  ref::layernorm_forward(y_ref, mean_ref, rstd_ref, xd, gd, ref::to_double(beta), rows, cols, eps);
  ref::layernorm_backward(dx_ref, dgamma_ref, dbeta_ref, dyd, xd, mean_ref, rstd_ref, gd, rows,
                          cols, false);
  const double tol = ref::tolerance<T>();
  EXPECT_TRUE(ref::all_close(mean, mean_ref, tol, "mean"));
  EXPECT_TRUE(ref::all_close(rstd, rstd_ref, tol, "rstd"));
  EXPECT_TRUE(ref::all_close(y, y_ref, tol, "y"));
  EXPECT_TRUE(ref::all_close(dx, dx_ref, tol, "dx"));
  EXPECT_TRUE(ref::all_close(dgamma, dgamma_ref, tol, "dgamma"));
  EXPECT_TRUE(ref::all_close(dbeta, dbeta_ref, tol, "dbeta"));
}

TYPED_TEST(SlicedRowsTest, SlicedLayerNormMatchesWholeRowLayerNorm) {
  uint64_t seed = 10;
  for (int64_t q : {1, 2, 3, 4})
    for (double offset : {0.0, 50.0})  // far from zero mean: Chan's combination stays exact
      check_sliced_layernorm<TypeParam>(7, 24, q, offset, seed++);
  check_sliced_layernorm<TypeParam>(3, 600, 3, 0.0, seed++);
  check_sliced_layernorm<TypeParam>(0, 12, 2, 0.0, seed++);
}

TYPED_TEST(SlicedRowsTest, Copy2dCopiesExactlyTheSubMatrix) {
  using T = TypeParam;
  const auto src = ref::cast_to<T>(ref::random_values(5 * 9, 1));
  std::vector<T> dst(4 * 7, T(-7));
  cpu::copy_2d<T>(dst.data() + 1, 7, src.data() + 2, 9, 3, 4);  // rows 0..2, cols 2..5 → cols 1..4
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 7; ++c) {
      const bool inside = r < 3 && c >= 1 && c < 5;
      EXPECT_EQ(dst[r * 7 + c], inside ? src[r * 9 + c + 1] : T(-7)) << r << "," << c;
    }
}

#ifdef MLPSCALE_WITH_CUDA
using namespace cuda_test;
#endif

TYPED_TEST(SlicedRowsTest, CudaMatchesCpu) {
  MLPS_REQUIRE_GPU("row_moments, combine_row_moments, layernorm_apply, "
                   "layernorm_backward_partial, layernorm_backward_apply, copy_2d");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t rows = 37, cols = 300, parts = 3;
  const auto x = random_t<T>(rows * cols, 1, 3.0, 5.0);
  const auto gamma = random_t<T>(cols, 2), beta = random_t<T>(cols, 3);
  const auto dy = random_t<T>(rows * cols, 4);
  GpuArray<T> x_d(x), gamma_d(gamma), beta_d(beta), dy_d(dy);

  std::vector<T> moments(rows * 2);
  GpuArray<T> moments_d(moments);
  cpu::row_moments<T>(moments.data(), x.data(), rows, cols);
  cuda::row_moments<T>(moments_d.get(), x_d.get(), rows, cols);
  EXPECT_TRUE(matches_cpu(moments_d.host(), moments, "moments"));

  const auto gathered = random_t<T>(parts * rows * 2, 5, 0.5, 2.0);
  std::vector<T> mean(rows), rstd(rows);
  GpuArray<T> gathered_d(gathered), mean_d(mean), rstd_d(rstd);
  cpu::combine_row_moments<T>(mean.data(), rstd.data(), gathered.data(), parts, rows, 100, 1e-5);
  cuda::combine_row_moments<T>(mean_d.get(), rstd_d.get(), gathered_d.get(), parts, rows, 100,
                               1e-5);
  EXPECT_TRUE(matches_cpu(mean_d.host(), mean, "mean"));
  EXPECT_TRUE(matches_cpu(rstd_d.host(), rstd, "rstd"));

  std::vector<T> y(rows * cols);
  GpuArray<T> y_d(y);
  cpu::layernorm_apply<T>(y.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                          beta.data(), rows, cols);
  cuda::layernorm_apply<T>(y_d.get(), x_d.get(), mean_d.get(), rstd_d.get(), gamma_d.get(),
                           beta_d.get(), rows, cols);
  EXPECT_TRUE(matches_cpu(y_d.host(), y, "y"));

  for (bool accumulate : {false, true}) {
    std::vector<T> sums(rows * 2), dgamma = random_t<T>(cols, 6), dbeta = random_t<T>(cols, 7);
    GpuArray<T> sums_d(sums), dgamma_d(dgamma), dbeta_d(dbeta);
    cpu::layernorm_backward_partial<T>(sums.data(), dgamma.data(), dbeta.data(), dy.data(),
                                       x.data(), mean.data(), rstd.data(), gamma.data(), rows,
                                       cols, accumulate);
    cuda::layernorm_backward_partial<T>(sums_d.get(), dgamma_d.get(), dbeta_d.get(), dy_d.get(),
                                        x_d.get(), mean_d.get(), rstd_d.get(), gamma_d.get(),
                                        rows, cols, accumulate);
    EXPECT_TRUE(matches_cpu(sums_d.host(), sums, "sums"));
    EXPECT_TRUE(matches_cpu(dgamma_d.host(), dgamma, "dgamma"));
    EXPECT_TRUE(matches_cpu(dbeta_d.host(), dbeta, "dbeta"));

    std::vector<T> dx(rows * cols);
    GpuArray<T> dx_d(dx);
    cpu::layernorm_backward_apply<T>(dx.data(), dy.data(), x.data(), mean.data(), rstd.data(),
                                     gamma.data(), sums.data(), rows, cols, parts * cols);
    cuda::layernorm_backward_apply<T>(dx_d.get(), dy_d.get(), x_d.get(), mean_d.get(),
                                      rstd_d.get(), gamma_d.get(), sums_d.get(), rows, cols,
                                      parts * cols);
    EXPECT_TRUE(matches_cpu(dx_d.host(), dx, "dx"));
  }

  std::vector<T> dst = random_t<T>(20 * 11, 8);
  GpuArray<T> dst_d(dst);
  cpu::copy_2d<T>(dst.data() + 2, 11, x.data() + 5, cols, 20, 7);
  cuda::copy_2d<T>(dst_d.get() + 2, 11, x_d.get() + 5, cols, 20, 7);
  EXPECT_EQ(dst_d.host(), dst);
#endif
}

}  // namespace
}  // namespace mlps
