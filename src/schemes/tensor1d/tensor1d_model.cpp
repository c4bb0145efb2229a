#include "src/schemes/tensor1d/tensor1d_model.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "src/model/predicted_classes.h"

namespace mlps {

template <typename T>
Tensor1dModel<T>::Tensor1dModel(Device& device, const Tensor1dPlan& plan, int tp_rank,
                                Communicator* tp, int64_t max_rows)
    : device_(device), plan_(plan), tp_(tp), hidden_(plan.model.hidden),
      classes_(plan.model.classes), inputs_width_(plan.model.input_features()),
      checkpoint_(plan.model.checkpoint_activations) {
  const int ranks = plan.tp;
  auto linear = [&](size_t i) {
    return std::make_unique<ShardedLinear<T>>(device, plan.linears[i], tp_rank, ranks);
  };
  const bool residual = plan.model.block == BlockKind::residual_mlp;
  embed_ = linear(0);
  for (int64_t l = 0; l < plan.model.layers; ++l) {
    Block b;
    if (residual) {
      b.fc1 = linear(1 + 2 * l);
      b.fc2 = linear(2 + 2 * l);
      if (!checkpoint_) b.saved = make_saved(b, max_rows);
    } else {
      b.fc1 = linear(1 + l);
    }
    blocks_.push_back(std::move(b));
  }
  classifier_ = linear(plan.linears.size() - 1);
  if (checkpoint_ && residual && !blocks_.empty()) shared_ = make_saved(blocks_.front(), max_rows);

  inputs_ = Buffer<T>(device, max_rows * inputs_width_);
  labels_ = Buffer<int32_t>(device, max_rows);
  for (int64_t l = 0; l <= plan.model.layers; ++l) activations_.emplace_back(device, max_rows * hidden_);
  if (residual && !blocks_.empty())
    grad_inner_ = Buffer<T>(device, max_rows * blocks_.front().fc1->local_out());
  grad_a_ = Buffer<T>(device, max_rows * hidden_);
  grad_b_ = Buffer<T>(device, max_rows * hidden_);
  grad_scratch_ = Buffer<T>(device, max_rows * hidden_);
  logits_ = Buffer<T>(device, max_rows * classes_);
  probs_ = Buffer<T>(device, max_rows * classes_);
  row_loss_ = Buffer<T>(device, max_rows);
  grad_logits_ = Buffer<T>(device, max_rows * classes_);
  if (classifier_->split() == LinearSplit::column) {
    const int64_t slice = classifier_->local_out();
    local_logits_ = Buffer<T>(device, max_rows * slice);
    gathered_logits_ = Buffer<T>(device, max_rows * classes_);
    bias_scratch_ = Buffer<T>(device, classes_);
    identity_ = Buffer<T>(device, slice * slice);
    std::vector<T> eye(static_cast<size_t>(slice * slice), T(0));
    for (int64_t i = 0; i < slice; ++i) eye[static_cast<size_t>(i * slice + i)] = T(1);
    identity_.upload(eye);
  }
}

template <typename T>
typename Tensor1dModel<T>::Saved Tensor1dModel<T>::make_saved(const Block& b, int64_t rows) {
  Saved s;
  s.normed = Buffer<T>(device_, rows * hidden_);
  s.mean = Buffer<T>(device_, rows);
  s.rstd = Buffer<T>(device_, rows);
  s.inner = Buffer<T>(device_, rows * b.fc1->local_out());
  return s;
}

template <typename T>
void Tensor1dModel<T>::bind(const std::function<ShardPointers<T>(const std::string&)>& storage) {
  auto bind_linear = [&](ShardedLinear<T>& linear, const std::string& name) {
    const ShardPointers<T> w = storage(name + ".weight");
    const ShardPointers<T> b = storage(name + ".bias");
    linear.bind(w.value, w.grad, b.value, b.grad);
  };
  bind_linear(*embed_, "embed");
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const std::string name = "block" + std::to_string(l);
    Block& b = blocks_[l];
    if (b.fc2) {
      b.gamma = storage(name + ".norm.weight");
      b.beta = storage(name + ".norm.bias");
      bind_linear(*b.fc1, name + ".fc1");
      bind_linear(*b.fc2, name + ".fc2");
    } else {
      bind_linear(*b.fc1, name + ".fc");
    }
  }
  bind_linear(*classifier_, "classifier");
}

template <typename T>
void Tensor1dModel<T>::all_reduce(T* data, int64_t count) {
  tp_->all_reduce(data, count);
}

template <typename T>
template <typename Grads>
void Tensor1dModel<T>::all_reduce_overlapping(T* dx, int64_t count, Grads weight_and_bias) {
  PendingComm pending = tp_->all_reduce_async(dx, dx, count, data_type_of<T>());
  weight_and_bias();  // reads neither dx nor anything the all-reduce writes
  pending->wait();
}

template <typename T>
double Tensor1dModel<T>::forward(const T* host_inputs, const int32_t* host_labels, int64_t rows) {
  device_.to_device(inputs_.data(), host_inputs, sizeof(T) * static_cast<size_t>(rows * inputs_width_));
  device_.to_device(labels_.data(), host_labels, sizeof(int32_t) * static_cast<size_t>(rows));
  forward_embed(rows);
  for (size_t l = 0; l < blocks_.size(); ++l)
    forward_block(blocks_[l], activations_[l].data(), activations_[l + 1].data(), rows);
  forward_classifier(activations_.back().data(), rows);
  device_.softmax_xent_forward<T>(probs_.data(), row_loss_.data(), logits_.data(), labels_.data(),
                                  rows, classes_);
  std::vector<T> losses(static_cast<size_t>(rows));
  device_.to_host(losses.data(), row_loss_.data(), sizeof(T) * losses.size());
  double sum = 0.0;
  for (T v : losses) sum += static_cast<double>(v);
  return sum;
}

template <typename T>
void Tensor1dModel<T>::forward_embed(int64_t rows) {
  ShardedLinear<T>& e = *embed_;
  T* y = activations_[0].data();
  // Row-parallel: this rank's input features are columns [in_offset, +local_in) of the input.
  e.multiply(inputs_.data() + e.in_offset(), inputs_width_, y, hidden_, rows);
  if (e.split() == LinearSplit::row) all_reduce(y, rows * hidden_);
  e.add_bias(y, rows);
}

template <typename T>
void Tensor1dModel<T>::forward_block(Block& b, const T* x, T* y, int64_t rows) {
  ShardedLinear<T>& fc1 = *b.fc1;
  if (!b.fc2) {  // plain: the input is full, or the partner column block's slice (row split)
    fc1.multiply(x, fc1.local_in(), y, fc1.local_out(), rows);
    if (fc1.split() == LinearSplit::row) all_reduce(y, rows * hidden_);
    fc1.add_bias(y, rows);
    device_.relu_forward<T>(y, y, rows * fc1.local_out());
    return;
  }
  ShardedLinear<T>& fc2 = *b.fc2;
  Saved& s = saved_of(b);
  device_.layernorm_forward<T>(s.normed.data(), s.mean.data(), s.rstd.data(), x, b.gamma.value,
                               b.beta.value, rows, hidden_, 1e-5);
  fc1.multiply(s.normed.data(), hidden_, s.inner.data(), fc1.local_out(), rows);
  fc1.add_bias(s.inner.data(), rows);
  device_.relu_forward<T>(s.inner.data(), s.inner.data(), rows * fc1.local_out());
  fc2.multiply(s.inner.data(), fc2.local_in(), y, hidden_, rows);
  if (fc2.split() == LinearSplit::row) all_reduce(y, rows * hidden_);
  fc2.add_bias(y, rows);
  device_.residual_add<T>(y, y, x, rows * hidden_);
}

template <typename T>
void Tensor1dModel<T>::forward_classifier(const T* x, int64_t rows) {
  ShardedLinear<T>& c = *classifier_;
  if (c.split() != LinearSplit::column) {
    c.multiply(x, hidden_, logits_.data(), classes_, rows);
    c.add_bias(logits_.data(), rows);
    return;
  }
  // Each rank's [rows × C/T] logits; the all-gather stacks them rank after rank, and one
  // identity GEMM per rank (exact) copies each block into its columns of [rows × C], so the
  // softmax cross-entropy runs on the full logits, identically on every tp rank.
  const int64_t slice = c.local_out();
  c.multiply(x, hidden_, local_logits_.data(), slice, rows);
  c.add_bias(local_logits_.data(), rows);
  tp_->all_gather(local_logits_.data(), gathered_logits_.data(), rows * slice);
  for (int t = 0; t < plan_.tp; ++t)
    device_.gemm<T>(false, false, rows, slice, slice, T(1), gathered_logits_.data() + t * rows * slice,
                    slice, identity_.data(), slice, T(0), logits_.data() + t * slice, classes_);
}

template <typename T>
void Tensor1dModel<T>::backward(int64_t rows, int64_t global_batch,
                                const std::function<void(int)>& unit_done) {
  device_.softmax_xent_backward<T>(grad_logits_.data(), probs_.data(), labels_.data(), rows,
                                   classes_, 1.0 / static_cast<double>(global_batch));
  T* dy = grad_a_.data();
  T* dx = grad_b_.data();
  const int layers = static_cast<int>(blocks_.size());
  backward_classifier(activations_.back().data(), dy, rows);
  unit_done(layers + 1);
  for (int l = layers; l-- > 0;) {
    if (checkpoint_) {
      // Rewrites the block's output in place with the same values (nothing reads it now: the
      // next unit's backward is done).
      std::optional<ScopedPhase> timed;
      if (timer_) timed.emplace(*timer_, Phase::recompute);
      forward_block(blocks_[l], activations_[l].data(), activations_[l + 1].data(), rows);
    }
    backward_block(blocks_[l], activations_[l].data(), activations_[l + 1].data(), dy, dx, rows);
    unit_done(l + 1);
    std::swap(dx, dy);
  }
  backward_embed(dy, rows);
  unit_done(0);
}

template <typename T>
void Tensor1dModel<T>::backward_classifier(const T* x, T* dx, int64_t rows) {
  ShardedLinear<T>& c = *classifier_;
  if (c.split() != LinearSplit::column) {
    c.input_grad(grad_logits_.data(), classes_, dx, hidden_, rows);
    c.weight_grad(x, hidden_, grad_logits_.data(), classes_, rows);
    c.bias_grad(grad_logits_.data(), rows);
    return;
  }
  // This rank's classes are columns [out_offset, +C/T) of the replicated dlogits.
  const T* dl = grad_logits_.data() + c.out_offset();
  c.input_grad(dl, classes_, dx, hidden_, rows);
  all_reduce_overlapping(dx, rows * hidden_, [&] {
    c.weight_grad(x, hidden_, dl, classes_, rows);
    device_.bias_grad<T>(bias_scratch_.data(), grad_logits_.data(), rows, classes_, false);
    device_.copy(c.bias_grad_data(), bias_scratch_.data() + c.out_offset(),
                 sizeof(T) * static_cast<size_t>(c.local_out()));
  });
}

template <typename T>
void Tensor1dModel<T>::backward_block(Block& b, const T* x, const T* y, const T* dy, T* dx,
                                      int64_t rows) {
  ShardedLinear<T>& fc1 = *b.fc1;
  if (!b.fc2) {  // plain: dy and y have the block's output width, dx its input width
    const int64_t width = fc1.local_out();
    T* grad_pre = grad_scratch_.data();  // ∂L/∂(fc output), before the ReLU
    device_.relu_backward<T>(grad_pre, dy, y, rows * width);
    if (fc1.split() == LinearSplit::column) {
      fc1.input_grad(grad_pre, width, dx, hidden_, rows);
      all_reduce_overlapping(dx, rows * hidden_, [&] {
        fc1.weight_grad(x, hidden_, grad_pre, width, rows);
        fc1.bias_grad(grad_pre, rows);
      });
      return;
    }
    fc1.weight_grad(x, fc1.local_in(), grad_pre, width, rows);
    fc1.bias_grad(grad_pre, rows);
    fc1.input_grad(grad_pre, width, dx, fc1.local_in(), rows);
    return;
  }
  ShardedLinear<T>& fc2 = *b.fc2;
  const Saved& s = saved_of(b);
  const int64_t inner = fc1.local_out();
  // fc2 (row-parallel): dY is replicated, so its gradients need no communication.
  fc2.weight_grad(s.inner.data(), inner, dy, hidden_, rows);
  fc2.bias_grad(dy, rows);
  fc2.input_grad(dy, hidden_, grad_inner_.data(), inner, rows);
  device_.relu_backward<T>(grad_inner_.data(), grad_inner_.data(), s.inner.data(), rows * inner);
  T* grad_normed = grad_scratch_.data();
  fc1.input_grad(grad_inner_.data(), inner, grad_normed, hidden_, rows);
  auto fc1_grads = [&] {
    fc1.weight_grad(s.normed.data(), hidden_, grad_inner_.data(), inner, rows);
    fc1.bias_grad(grad_inner_.data(), rows);
  };
  if (fc1.split() == LinearSplit::column) all_reduce_overlapping(grad_normed, rows * hidden_, fc1_grads);
  else fc1_grads();
  device_.layernorm_backward<T>(dx, b.gamma.grad, b.beta.grad, grad_normed, x, s.mean.data(),
                                s.rstd.data(), b.gamma.value, rows, hidden_, false);
  device_.residual_add<T>(dx, dx, dy, rows * hidden_);  // the skip connection's gradient
}

template <typename T>
void Tensor1dModel<T>::backward_embed(const T* dy, int64_t rows) {
  ShardedLinear<T>& e = *embed_;
  e.weight_grad(inputs_.data() + e.in_offset(), inputs_width_, dy, hidden_, rows);
  e.bias_grad(dy, rows);
}

template <typename T>
std::vector<int32_t> Tensor1dModel<T>::predictions(int64_t rows) const {
  return predicted_classes(device_, probs_.data(), rows, classes_);
}

template class Tensor1dModel<float>;
template class Tensor1dModel<double>;

}  // namespace mlps
