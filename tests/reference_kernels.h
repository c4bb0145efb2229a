#pragma once
// Naive fp64 reference versions of the kernels (textbook formulas, no tricks) and the helpers
// the kernel tests share: seeded random inputs, conversions and a normwise comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace mlps::ref {

using Vec = std::vector<double>;

// ---- helpers

inline Vec random_values(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline std::vector<int32_t> random_labels(size_t n, int32_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, classes - 1);
  std::vector<int32_t> labels(n);
  for (int32_t& l : labels) l = dist(rng);
  return labels;
}

template <typename T>
std::vector<T> cast_to(const Vec& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
Vec to_double(const std::vector<T>& v) {
  return Vec(v.begin(), v.end());
}

// Rounds values to T and back, so that a reference sees exactly the kernel's inputs.
template <typename T>
Vec rounded_to(const Vec& v) {
  return to_double(cast_to<T>(v));
}

// Normwise comparison: every |got − want| ≤ tol·max|want| (tol·1 when want is all zeros), so
// entries near zero are judged on the scale of the whole result, not their own.
inline ::testing::AssertionResult all_close(const Vec& got, const Vec& want, double tol,
                                            const std::string& what) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " != " << want.size();
  double scale = 0.0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  if (scale == 0.0) scale = 1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    if (!(err <= tol * scale))  // also catches NaN
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " (error "
             << err << " > " << tol << " × " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
::testing::AssertionResult all_close(const std::vector<T>& got, const Vec& want, double tol,
                                     const std::string& what) {
  return all_close(to_double(got), want, tol, what);
}

// Stated tolerances: fp64 kernels agree to ~1e-12 relative, fp32 kernels (fp32 storage, most
// reductions in fp64) to ~1e-5.
template <typename T>
constexpr double tolerance() {
  return sizeof(T) == sizeof(double) ? 1e-12 : 1e-5;
}

// The typed kernel suites: every case in float and double, each at its stated tolerance.
template <typename T>
class KernelTest : public ::testing::Test {
 protected:
  static constexpr double tol = tolerance<T>();
};
using KernelTypes = ::testing::Types<float, double>;

// "rows x cols", naming a case in failure messages.
inline std::string dims(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

// Inputs for ReLU with exact zeros among them (the boundary where the masks must agree).
inline Vec relu_inputs(size_t n, uint64_t seed) {
  Vec x = random_values(n, seed);
  for (size_t i = 0; i < n; i += 7) x[i] = 0.0;
  return x;
}

struct GemmCase {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t pad;  // extra elements per row of A, B and C (leading dimension > columns)
  double alpha, beta;
  int64_t a_rows() const { return trans_a ? k : m; }
  int64_t a_cols() const { return trans_a ? m : k; }
  int64_t b_rows() const { return trans_b ? n : k; }
  int64_t b_cols() const { return trans_b ? k : n; }
};

inline std::ostream& operator<<(std::ostream& os, const GemmCase& g) {
  return os << "trans_a=" << g.trans_a << " trans_b=" << g.trans_b << " m=" << g.m
            << " n=" << g.n << " k=" << g.k << " pad=" << g.pad << " beta=" << g.beta;
}

// The cases both GEMM twins are checked on: every transpose pair, with and without padded
// leading dimensions, overwriting C (beta 0) and accumulating into it.
inline std::vector<GemmCase> gemm_sweep() {
  std::vector<GemmCase> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t pad : {0, 5})
        for (double beta : {0.0, -0.3}) cases.push_back({ta, tb, 37, 23, 19, pad, 0.7, beta});
  return cases;
}

// ---- reference kernels (row-major, leading dimensions as in kernel_api.inc)

inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const Vec& a, int64_t lda, const Vec& b, int64_t ldb, double beta, Vec& c,
                 int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double aip = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bpj = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += aip * bpj;
      }
      double& cij = c[i * ldc + j];
      cij = alpha * sum + (beta == 0.0 ? 0.0 : beta * cij);
    }
}

inline void bias_add(Vec& y, const Vec& bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
}

inline void bias_grad(Vec& dbias, const Vec& dy, int64_t rows, int64_t cols, bool accumulate) {
  for (int64_t c = 0; c < cols; ++c) {
    double sum = accumulate ? dbias[c] : 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += dy[r * cols + c];
    dbias[c] = sum;
  }
}

inline Vec relu_forward(const Vec& x) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::max(x[i], 0.0);
  return y;
}

inline Vec relu_backward(const Vec& dy, const Vec& y) {
  Vec dx(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) dx[i] = y[i] > 0.0 ? dy[i] : 0.0;
  return dx;
}

inline Vec residual_add(const Vec& a, const Vec& b) {
  Vec y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

inline void layernorm_forward(Vec& y, Vec& mean, Vec& rstd, const Vec& x, const Vec& gamma,
                              const Vec& beta, int64_t rows, int64_t cols, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0.0;
    for (int64_t c = 0; c < cols; ++c) mu += x[r * cols + c];
    mu /= static_cast<double>(cols);
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
    var /= static_cast<double>(cols);
    mean[r] = mu;
    rstd[r] = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (x[r * cols + c] - mu) * rstd[r] * gamma[c] + beta[c];
  }
}

// Through the explicit Jacobian ∂y_i/∂x_j = gamma_i·rstd·(δ_ij − 1/N − xhat_i·xhat_j/N),
// independent of the fused formula the kernels use.
inline void layernorm_backward(Vec& dx, Vec& dgamma, Vec& dbeta, const Vec& dy, const Vec& x,
                               const Vec& mean, const Vec& rstd, const Vec& gamma, int64_t rows,
                               int64_t cols, bool accumulate) {
  if (!accumulate) {
    std::fill(dgamma.begin(), dgamma.end(), 0.0);
    std::fill(dbeta.begin(), dbeta.end(), 0.0);
  }
  const double n = static_cast<double>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    auto xhat = [&](int64_t c) { return (x[r * cols + c] - mean[r]) * rstd[r]; };
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0.0;
      for (int64_t i = 0; i < cols; ++i) {
        const double jacobian =
            gamma[i] * rstd[r] * ((i == j ? 1.0 : 0.0) - 1.0 / n - xhat(i) * xhat(j) / n);
        sum += dy[r * cols + i] * jacobian;
      }
      dx[r * cols + j] = sum;
    }
    for (int64_t c = 0; c < cols; ++c) {
      dgamma[c] += dy[r * cols + c] * xhat(c);
      dbeta[c] += dy[r * cols + c];
    }
  }
}

inline void softmax_xent_forward(Vec& probs, Vec& row_loss, const Vec& logits,
                                 const std::vector<int32_t>& labels, int64_t rows,
                                 int64_t classes) {
  for (int64_t r = 0; r < rows; ++r) {
    double max_z = logits[r * classes];
    for (int64_t c = 1; c < classes; ++c) max_z = std::max(max_z, logits[r * classes + c]);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits[r * classes + c] - max_z);
    for (int64_t c = 0; c < classes; ++c)
      probs[r * classes + c] = std::exp(logits[r * classes + c] - max_z) / sum;
    row_loss[r] = -std::log(probs[r * classes + labels[r]]);
  }
}

inline Vec softmax_xent_backward(const Vec& probs, const std::vector<int32_t>& labels,
                                 int64_t rows, int64_t classes, double scale) {
  Vec d(probs.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < classes; ++c)
      d[r * classes + c] = (probs[r * classes + c] - (c == labels[r] ? 1.0 : 0.0)) * scale;
  return d;
}

inline void adam_update(Vec& param, const Vec& grad, Vec& m, Vec& v, double lr, double beta1,
                        double beta2, double eps, double bias_correction1,
                        double bias_correction2) {
  for (size_t i = 0; i < param.size(); ++i) {
    m[i] = beta1 * m[i] + (1.0 - beta1) * grad[i];
    v[i] = beta2 * v[i] + (1.0 - beta2) * grad[i] * grad[i];
    const double m_hat = m[i] / bias_correction1;
    const double v_hat = v[i] / bias_correction2;
    param[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

inline void sgd_update(Vec& param, const Vec& grad, double lr) {
  for (size_t i = 0; i < param.size(); ++i) param[i] -= lr * grad[i];
}

}  // namespace mlps::ref
