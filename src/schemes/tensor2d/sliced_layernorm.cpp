#include "src/schemes/tensor2d/sliced_layernorm.h"

#include <cmath>

#include "src/base/balanced_split.h"
#include "src/model/sliced_ops.h"

namespace mlps {
namespace {

// Chan's parallel variance over slices of different widths (moments as row_moments writes
// them, slice after slice): mean = Σ_p w_p·mean_p / H, M2 = Σ_p M2_p + Σ_p w_p·(mean_p − mean)².
template <typename T>
void combine_uneven_row_moments(T* mean, T* rstd, const T* moments, int64_t parts, int64_t rows,
                                int64_t hidden, double eps) {
  const auto h = static_cast<double>(hidden);
  for (int64_t r = 0; r < rows; ++r) {
    auto part = [&](int64_t p, int which) {
      return static_cast<double>(moments[(p * rows + r) * 2 + which]);
    };
    double mu = 0.0;
    for (int64_t p = 0; p < parts; ++p)
      mu += static_cast<double>(part_size(hidden, parts, p)) * part(p, 0);
    mu /= h;
    double m2 = 0.0;
    for (int64_t p = 0; p < parts; ++p) {
      const double d = part(p, 0) - mu;
      m2 += part(p, 1) + static_cast<double>(part_size(hidden, parts, p)) * d * d;
    }
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(1.0 / std::sqrt(m2 / h + eps));
  }
}

}  // namespace

template <typename T>
SlicedLayerNorm<T>::SlicedLayerNorm(Device& device, Communicator& row, int64_t hidden,
                                    int64_t max_rows, double eps)
    : device_(device), row_(row), hidden_(hidden),
      local_(part_size(hidden, row.size(), row.rank())), uneven_(hidden % row.size() != 0),
      eps_(eps),
      moments_(device, 2 * max_rows),
      gathered_(device, row.size() > 1 ? 2 * max_rows * row.size() : 0),
      sums_(device, 2 * max_rows) {}

template <typename T>
void SlicedLayerNorm<T>::forward(const T* x, T* y, Acc<T>* mean, Acc<T>* rstd, int64_t rows) {
  using A = Acc<T>;
  sliced::row_moments<T>(device_, moments_.data(), x, rows, local_);
  const A* gathered = moments_.data();  // a grid row of one rank has every moment already
  if (row_.size() > 1) {
    row_.all_gather<A>(moments_.data(), gathered_.data(), 2 * rows);
    gathered = gathered_.data();
  }
  if (uneven_) {
    const auto parts = static_cast<size_t>(row_.size());
    host_moments_.resize(parts * 2 * static_cast<size_t>(rows));
    host_mean_.resize(static_cast<size_t>(rows));
    host_rstd_.resize(static_cast<size_t>(rows));
    device_.to_host(host_moments_.data(), gathered, sizeof(A) * host_moments_.size());
    combine_uneven_row_moments<A>(host_mean_.data(), host_rstd_.data(), host_moments_.data(),
                                  row_.size(), rows, hidden_, eps_);
    device_.to_device(mean, host_mean_.data(), sizeof(A) * host_mean_.size());
    device_.to_device(rstd, host_rstd_.data(), sizeof(A) * host_rstd_.size());
  } else {
    sliced::combine_row_moments<A>(device_, mean, rstd, gathered, row_.size(),
                                   rows, local_, eps_);
  }
  sliced::layernorm_apply<T>(device_, y, x, mean, rstd, gamma_, beta_, rows, local_);
}

template <typename T>
void SlicedLayerNorm<T>::backward(const T* x, const T* dy, T* dx, const Acc<T>* mean,
                                  const Acc<T>* rstd, int64_t rows, bool /*accumulate*/) {
  sliced::layernorm_backward_partial<T>(device_, sums_.data(), dgamma_, dbeta_, dy, x,
                                        mean, rstd, gamma_, rows, local_, false);
  if (row_.size() > 1) row_.all_reduce<Acc<T>>(sums_.data(), 2 * rows);
  sliced::layernorm_backward_apply<T>(device_, dx, dy, x, mean, rstd, gamma_, sums_.data(), rows,
                                      local_, hidden_);
}

template class SlicedLayerNorm<float>;
template class SlicedLayerNorm<double>;
template class SlicedLayerNorm<bf16>;
template class SlicedLayerNorm<fp16>;

}  // namespace mlps
