#include "src/schemes/tensor3d/linear_3d.h"

namespace mlps {

template <typename T>
Linear3d<T>::Linear3d(Device& device, Communicator& in, Communicator& out, Communicator& depth,
                      int64_t in_features, int64_t out_features, const Overlap3d& overlap)
    : device_(device), in_(in), out_(out), depth_(depth), overlap_(overlap),
      in_local_(in_features / in.size()), out_local_((out_features + out.size() - 1) / out.size()),
      block_(in_local_ * out_local_), shard_(block_ / depth.size()),
      row0_(out.rank() * out_local_), col0_(in.rank() * in_local_) {}

template <typename T>
void Linear3d<T>::start_gather() {
  if (depth_.size() == 1 || gathered_ || gather_) return;
  gather_ = depth_.all_gather_async(weight_, full_weight_, shard_, data_type_of<T>());
}

template <typename T>
const T* Linear3d<T>::gathered_weight() {
  if (depth_.size() == 1) return weight_;
  if (!gathered_) {
    start_gather();
    complete(gather_);
    gathered_ = true;
  }
  return full_weight_;
}

template <typename T>
void Linear3d<T>::forward(const T* x, T* y, int64_t rows, bool backward_next) {
  const T* w = gathered_weight();
  if (overlap_.prefetch_weights && next_ && !backward_next) next_->start_gather();
  device_.gemm<T>(false, true, rows, out_local_, in_local_, Acc<T>(1), x, in_local_, w,
                  in_local_, Acc<T>(0), y, out_local_);
  if (in_.size() > 1) {
    auto sum = in_.all_reduce_async(y, y, rows * out_local_, data_type_of<T>());
    in_.progress();
    sum->wait();
  }
  device_.bias_add<T>(y, bias_, rows, out_local_);
  // Backward gathers again, unless it comes next: nothing gathers into the scratch between.
  if (!overlap_.cache_weights && !backward_next) gathered_ = false;
}

template <typename T>
void Linear3d<T>::backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) {
  const T* w = gathered_weight();
  if (overlap_.prefetch_weights && previous_) previous_->start_gather();
  PendingComm dx_sum;
  if (dx) {
    device_.gemm<T>(false, false, rows, in_local_, out_local_, Acc<T>(1), dy, out_local_, w,
                    in_local_, Acc<T>(0), dx, in_local_);
    if (out_.size() > 1) {
      dx_sum = out_.all_reduce_async(dx, dx, rows * in_local_, data_type_of<T>());
      if (!overlap_.overlap_dx) complete(dx_sum);
    }
  }
  // dW = dyᵀ·x over this rank's rows; the depth ranks hold the other rows. Without depth it
  // goes straight into the gradient, added into the zeros the last update left (accumulate).
  finish_weight_gradient();  // the previous step's (or a deferred) reduce-scatter
  const bool by_depth = depth_.size() > 1;
  Acc<T>* dw = by_depth ? full_dweight_ : dweight_;
  device_.gemm_gradient<T>(true, false, out_local_, in_local_, rows, Acc<T>(1), dy, out_local_, x,
                           in_local_, accumulate && !by_depth ? Acc<T>(1) : Acc<T>(0), dw,
                           in_local_);
  device_.bias_grad<T>(dbias_, dy, rows, out_local_, accumulate);
  if (by_depth) {
    reduce_ = depth_.reduce_scatter_async(dw, dweight_, shard_, data_type_of<Acc<T>>());
    if (!overlap_.defer_dw_reduce) finish_weight_gradient();
  }
  if (dx_sum) {
    out_.progress();
    dx_sum->wait();
  }
  gathered_ = false;
  if (next_) next_->finish_weight_gradient();
}

template class Linear3d<float>;
template class Linear3d<double>;
template class Linear3d<bf16>;
template class Linear3d<fp16>;

}  // namespace mlps
