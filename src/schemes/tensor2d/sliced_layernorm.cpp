#include "src/schemes/tensor2d/sliced_layernorm.h"

#include "src/schemes/tensor2d/sliced_ops.h"

namespace mlps {

template <typename T>
SlicedLayerNorm<T>::SlicedLayerNorm(Device& device, Communicator& row, int64_t hidden,
                                    int64_t max_rows, double eps)
    : device_(device), row_(row), hidden_(hidden), local_(hidden / row.size()), eps_(eps),
      moments_(device, 2 * max_rows),
      gathered_(device, row.size() > 1 ? 2 * max_rows * row.size() : 0),
      mean_(device, max_rows), rstd_(device, max_rows), sums_(device, 2 * max_rows) {}

template <typename T>
void SlicedLayerNorm<T>::bind(const T* gamma, const T* beta, T* dgamma, T* dbeta) {
  gamma_ = gamma;
  beta_ = beta;
  dgamma_ = dgamma;
  dbeta_ = dbeta;
}

template <typename T>
void SlicedLayerNorm<T>::forward(const T* x, T* y, int64_t rows) {
  sliced::row_moments<T>(device_, moments_.data(), x, rows, local_);
  const T* gathered = moments_.data();  // a grid row of one rank has every moment already
  if (row_.size() > 1) {
    row_.all_gather<T>(moments_.data(), gathered_.data(), 2 * rows);
    gathered = gathered_.data();
  }
  sliced::combine_row_moments<T>(device_, mean_.data(), rstd_.data(), gathered, row_.size(),
                                 rows, local_, eps_);
  sliced::layernorm_apply<T>(device_, y, x, mean_.data(), rstd_.data(), gamma_, beta_, rows,
                             local_);
}

template <typename T>
void SlicedLayerNorm<T>::backward(const T* x, const T* dy, T* dx, int64_t rows) {
  sliced::layernorm_backward_partial<T>(device_, sums_.data(), dgamma_, dbeta_, dy, x,
                                        mean_.data(), rstd_.data(), gamma_, rows, local_, false);
  if (row_.size() > 1) row_.all_reduce<T>(sums_.data(), 2 * rows);
  sliced::layernorm_backward_apply<T>(device_, dx, dy, x, mean_.data(), rstd_.data(), gamma_,
                                      sums_.data(), rows, local_, hidden_);
}

template class SlicedLayerNorm<float>;
template class SlicedLayerNorm<double>;

}  // namespace mlps
