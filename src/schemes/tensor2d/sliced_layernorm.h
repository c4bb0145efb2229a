#pragma once
// LayerNorm(H) on activations whose features are sliced over the ranks of `row`: rank j holds
// [rows × h_j] and γ, β [h_j], h_j = part_size(H, q, j). Each rank's slice mean and Σ(x − mean)²
// are all-gathered and combined by Chan's parallel variance (no E[x²] − E[x]² cancellation);
// backward all-reduces the per-row Σ dy·γ and Σ dy·γ·x̂. dgamma and dbeta are this rank's rows'
// sums only: the caller sums them over the rows' other holders. Equal slices combine on the
// device; unequal ones on the host, weighting each slice by its width, because the kernel
// assumes equal widths (on a GPU: a synchronisation and two copies of 2·q·rows values).
#include <vector>

#include "src/device/buffer.h"
#include "src/comm/communicator.h"
#include "src/model/layers.h"

namespace mlps {

template <typename T>
class SlicedLayerNorm : public LayerNorm<T> {
 public:
  SlicedLayerNorm(Device& device, Communicator& row, int64_t hidden, int64_t max_rows,
                  double eps = 1e-5);
  void bind(const T* gamma, const T* beta, Acc<T>* dgamma, Acc<T>* dbeta) {
    gamma_ = gamma;
    beta_ = beta;
    dgamma_ = dgamma;
    dbeta_ = dbeta;
  }
  // y = LayerNorm(x) on this rank's slice, the row statistics to mean and rstd [rows].
  void forward(const T* x, T* y, Acc<T>* mean, Acc<T>* rstd, int64_t rows) override;
  // dx from dy (x: the forward input); writes this rank's dgamma, dbeta (overwritten).
  void backward(const T* x, const T* dy, T* dx, const Acc<T>* mean, const Acc<T>* rstd,
                int64_t rows, bool accumulate = false) override;

  int64_t width() const override { return local_; }

 private:
  Device& device_;
  Communicator& row_;
  int64_t hidden_, local_;
  bool uneven_;  // q does not divide H: slices differ in width
  double eps_;
  const T* gamma_ = nullptr;
  const T* beta_ = nullptr;
  Acc<T>* dgamma_ = nullptr;
  Acc<T>* dbeta_ = nullptr;
  // Statistics are Acc<T>; they cross the row on its wire (16 bits with mixed precision).
  Buffer<Acc<T>> moments_, gathered_, sums_;
  std::vector<Acc<T>> host_moments_, host_mean_, host_rstd_;  // the uneven combine
};

}  // namespace mlps
