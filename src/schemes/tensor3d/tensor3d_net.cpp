#include "src/schemes/tensor3d/tensor3d_net.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "src/model/fc_net.h"
#include "src/model/predicted_classes.h"
#include "src/schemes/tensor2d/sliced_ops.h"

namespace mlps {
namespace {

ShardAxis other(ShardAxis a) { return a == ShardAxis::inner ? ShardAxis::outer : ShardAxis::inner; }

}  // namespace

template <typename T>
std::unique_ptr<Linear3d<T>> Tensor3dNet<T>::make_linear(const std::string& name,
                                                         ShardAxis& axis, int64_t in,
                                                         int64_t out) {
  Communicator& in_group = grid_.axis(axis);
  Communicator& out_group = grid_.axis(other(axis));
  auto layer = std::make_unique<Linear3d<T>>(device_, in_group, out_group, grid_.depth(), in,
                                             out, overlap_);
  LocalTensor w;
  w.name = name + ".weight";
  w.rows = out;
  w.cols = in;
  w.weight = true;
  w.offset = weight_count_;
  w.count = layer->shard_elements();
  w.row0 = layer->row0();
  w.col0 = layer->col0();
  w.block_cols = layer->in_local();
  w.first = grid_.d() * layer->shard_elements();
  w.owner = grid_.replica() == 0;
  weight_count_ += w.count;
  tensors_.push_back(w);
  add_vector(name + ".bias", out, out_group);
  axis = other(axis);
  linears_.push_back(layer.get());
  return layer;
}

template <typename T>
int64_t Tensor3dNet<T>::add_vector(const std::string& name, int64_t features,
                                   Communicator& group) {
  LocalTensor v;
  v.name = name;
  v.rows = 1;
  v.cols = features;
  v.offset = vector_count_;
  v.count = (features + group.size() - 1) / group.size();
  v.col0 = group.rank() * v.count;
  // One copy per feature slice: the other plane axis, depth and data hold the same values.
  const bool first_of_others = &group == &grid_.inner() ? grid_.r() == 0 : grid_.c() == 0;
  v.owner = grid_.replica() == 0 && grid_.d() == 0 && first_of_others;
  vector_count_ += v.count;
  tensors_.push_back(v);
  return v.offset;
}

template <typename T>
Tensor3dNet<T>::Tensor3dNet(Device& device, Grid3d& grid, const ModelConfig& config,
                            int64_t max_rows, uint64_t seed, const Overlap3d& overlap)
    : device_(device), grid_(grid), config_(config), overlap_(overlap) {
  const int64_t h = config.hidden, f = config.ffn_hidden();
  int64_t grad_normed_elements = 0, grad_inner_elements = 0;
  ShardAxis axis = ShardAxis::outer;  // the pixels
  embed_ = make_linear("embed", axis, config.input_features(), h);
  axes_.push_back(axis);
  for (int64_t l = 0; l < config.layers; ++l) {
    const std::string name = "block" + std::to_string(l);
    Block b;
    if (config.block == BlockKind::plain) {
      b.fc1 = make_linear(name + ".fc", axis, h, h);
    } else {
      Communicator& group = grid.axis(axis);
      b.gamma = add_vector(name + ".norm.weight", h, group);
      b.beta = add_vector(name + ".norm.bias", h, group);
      b.fc1 = make_linear(name + ".fc1", axis, h, f);
      b.fc2 = make_linear(name + ".fc2", axis, f, h);
      if (!config.checkpoint_activations) b.saved = make_saved(b, max_rows);
    }
    grad_normed_elements = std::max(grad_normed_elements, max_rows * b.fc1->in_local());
    grad_inner_elements = std::max(grad_inner_elements, max_rows * b.fc1->out_local());
    blocks_.push_back(std::move(b));
    axes_.push_back(axis);
  }
  classifier_ = make_linear("classifier", axis, h, config.classes);
  logits_axis_ = axis;
  // Residual blocks map the inner axis to itself, so one Saved fits all of them.
  if (config.checkpoint_activations && config.block == BlockKind::residual_mlp &&
      !blocks_.empty())
    shared_ = make_saved(blocks_.front(), max_rows);
  if (config.block == BlockKind::residual_mlp)
    grad_normed_ = Buffer<T>(device, grad_normed_elements);
  grad_inner_ = Buffer<T>(device, grad_inner_elements);

  // FC_Net's ids, names and shapes, in its order (no parameter memory is allocated).
  FcNet<T> reference(device, config, 1, ParameterStorage::external);
  if (reference.parameters().size() != tensors_.size())
    throw std::logic_error("tensor3d: FC_Net has a different number of tensors");
  std::vector<T> weights(static_cast<size_t>(weight_count_)),
      vectors(static_cast<size_t>(vector_count_));
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const Parameter<T>& p = reference.parameters()[t];
    LocalTensor& s = tensors_[t];
    if (p.name != s.name || p.rows != s.rows || p.cols != s.cols)
      throw std::logic_error("tensor3d: tensor " + s.name + " is not FC_Net's " + p.name);
    s.tensor_id = p.tensor_id;
    // Exactly this rank's elements, from the counter-based initialiser.
    for (int64_t k = 0; k < s.count; ++k) {
      if (s.weight) {
        const int64_t e = s.first + k, row = s.row0 + e / s.block_cols;
        weights[s.offset + k] =
            row >= s.rows ? T(0)
                          : static_cast<T>(initial_value(seed, p.tensor_id, p.init, p.fan_in,
                                                         row, s.col0 + e % s.block_cols));
      } else {
        vectors[s.offset + k] =
            s.col0 + k >= s.cols
                ? T(0)
                : static_cast<T>(initial_value(seed, p.tensor_id, p.init, p.fan_in, 0,
                                               s.col0 + k));
      }
    }
  }
  weights_ = Buffer<T>(device, weight_count_);
  weight_grads_ = Buffer<T>(device, weight_count_);
  vectors_ = Buffer<T>(device, vector_count_);
  vector_grads_ = Buffer<T>(device, vector_count_);
  weights_.upload(weights);
  vectors_.upload(vectors);
  weight_grads_.zero();
  vector_grads_.zero();

  // Bind: each Linear owns tensors (weight, bias) in order; a LayerNorm (γ, β) before fc1.
  size_t t = 0;
  auto bind_linear = [&](Linear3d<T>& layer) {
    const LocalTensor& w = tensors_[t++];
    const LocalTensor& b = tensors_[t++];
    layer.bind(weights_.data() + w.offset, weight_grads_.data() + w.offset,
               vectors_.data() + b.offset, vector_grads_.data() + b.offset);
  };
  bind_linear(*embed_);
  for (Block& b : blocks_) {
    if (b.fc2) t += 2;  // γ, β: bound to a LayerNorm where one is used (saved_of)
    bind_linear(*b.fc1);
    if (b.fc2) bind_linear(*b.fc2);
  }
  bind_linear(*classifier_);
  for (size_t i = 0; i < linears_.size(); ++i)
    linears_[i]->set_neighbours(i + 1 < linears_.size() ? linears_[i + 1] : nullptr,
                                i > 0 ? linears_[i - 1] : nullptr);
  scratch_ = std::make_unique<DepthScratch<T>>(device, linears_, grid.depth().size(), overlap);

  const int64_t in_local = config.input_features() / grid.outer().size();
  inputs_ = Buffer<T>(device, max_rows * in_local);
  labels_ = Buffer<int32_t>(device, max_rows);
  for (ShardAxis a : axes_) activations_.emplace_back(device, max_rows * (h / grid.axis(a).size()));
  const int g = grid.axis(logits_axis_).size();
  const int64_t c = (config.classes + g - 1) / g;
  local_logits_ = Buffer<T>(device, max_rows * c);
  if (g > 1) gathered_logits_ = Buffer<T>(device, max_rows * c * g);
  logits_ = Buffer<T>(device, max_rows * config.classes);
  probs_ = Buffer<T>(device, max_rows * config.classes);
  row_loss_ = Buffer<T>(device, max_rows);
  grad_logits_ = Buffer<T>(device, max_rows * config.classes);
  local_grad_logits_ = Buffer<T>(device, max_rows * c);
  grad_a_ = Buffer<T>(device, max_rows * h);
  grad_b_ = Buffer<T>(device, max_rows * h);
}

template <typename T>
typename Tensor3dNet<T>::Saved Tensor3dNet<T>::make_saved(const Block& b, int64_t max_rows) {
  Saved s;
  s.norm = std::make_unique<SlicedLayerNorm<T>>(device_, b.fc1->in_group(), config_.hidden,
                                                max_rows);
  s.normed = Buffer<T>(device_, max_rows * b.fc1->in_local());
  s.inner = Buffer<T>(device_, max_rows * b.fc1->out_local());
  return s;
}

template <typename T>
typename Tensor3dNet<T>::Saved& Tensor3dNet<T>::saved_of(Block& b) {
  Saved& s = config_.checkpoint_activations ? shared_ : b.saved;
  s.norm->bind(vectors_.data() + b.gamma, vectors_.data() + b.beta,
               vector_grads_.data() + b.gamma, vector_grads_.data() + b.beta);
  return s;
}

template <typename T>
void Tensor3dNet<T>::forward_block(size_t l, int64_t rows, bool recompute) {
  Block& b = blocks_[l];
  const T* x = activations_[l].data();
  T* y = activations_[l + 1].data();  // a recompute rewrites it with the same values
  // In a recompute the block's last Linear goes straight on to its backward.
  if (!b.fc2) {
    b.fc1->forward(x, y, rows, recompute);
    device_.relu_forward<T>(y, y, rows * b.fc1->out_local());
    return;
  }
  Saved& s = saved_of(b);
  s.norm->forward(x, s.normed.data(), rows);
  b.fc1->forward(s.normed.data(), s.inner.data(), rows);
  device_.relu_forward<T>(s.inner.data(), s.inner.data(), rows * b.fc1->out_local());
  b.fc2->forward(s.inner.data(), y, rows, recompute);
  device_.residual_add<T>(y, y, x, rows * b.fc2->out_local());
}

template <typename T>
double Tensor3dNet<T>::forward(const HostBatch& batch) {
  const int64_t rows = batch.rows, classes = config_.classes;
  for (Linear3d<T>* layer : linears_) layer->invalidate();
  const int64_t in_local = config_.input_features() / grid_.outer().size();
  const int64_t first = grid_.r() * in_local;
  staged_inputs_.resize(static_cast<size_t>(rows * in_local));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(batch.pixels.begin() + r * batch.features + first, in_local,
                staged_inputs_.begin() + r * in_local);
  device_.to_device(inputs_.data(), staged_inputs_.data(), sizeof(T) * staged_inputs_.size());
  device_.to_device(labels_.data(), batch.labels.data(), sizeof(int32_t) * rows);

  embed_->forward(inputs_.data(), activations_[0].data(), rows);
  for (size_t l = 0; l < blocks_.size(); ++l) forward_block(l, rows, false);
  classifier_->forward(activations_.back().data(), local_logits_.data(), rows);

  Communicator& group = grid_.axis(logits_axis_);
  const int64_t c = (classes + group.size() - 1) / group.size();
  const T* gathered = local_logits_.data();
  if (group.size() > 1) {
    group.all_gather<T>(local_logits_.data(), gathered_logits_.data(), rows * c);
    gathered = gathered_logits_.data();
  }
  for (int p = 0; p < group.size(); ++p)
    sliced::copy_2d<T>(device_, logits_.data() + p * c, classes, gathered + p * rows * c, c,
                       rows, std::clamp<int64_t>(classes - p * c, 0, c));
  device_.softmax_xent_forward<T>(probs_.data(), row_loss_.data(), logits_.data(),
                                  labels_.data(), rows, classes);
  std::vector<T> losses(static_cast<size_t>(rows));
  device_.to_host(losses.data(), row_loss_.data(), sizeof(T) * losses.size());
  double sum = 0.0;
  for (T value : losses) sum += static_cast<double>(value);
  return sum;
}

template <typename T>
void Tensor3dNet<T>::linear_backward(Linear3d<T>& layer, const T* x, const T* dy, T* dx,
                                     int64_t rows) {
  layer.backward(x, dy, dx, rows);
  // A deferred dW reduce-scatter ran during this layer's backward: finish it now.
  if (deferred_) deferred_->finish_weight_gradient();
  deferred_ = &layer;
}

template <typename T>
void Tensor3dNet<T>::backward_block(size_t l, const T* dy, T* dx, int64_t rows) {
  Block& b = blocks_[l];
  const T* x = activations_[l].data();
  T* grad_inner = grad_inner_.data();
  if (!b.fc2) {
    device_.relu_backward<T>(grad_inner, dy, activations_[l + 1].data(),
                             rows * b.fc1->out_local());
    linear_backward(*b.fc1, x, grad_inner, dx, rows);
    return;
  }
  Saved& s = saved_of(b);
  T* grad_normed = grad_normed_.data();
  linear_backward(*b.fc2, s.inner.data(), dy, grad_inner, rows);
  device_.relu_backward<T>(grad_inner, grad_inner, s.inner.data(), rows * b.fc1->out_local());
  linear_backward(*b.fc1, s.normed.data(), grad_inner, grad_normed, rows);
  s.norm->backward(x, grad_normed, dx, rows);
  device_.residual_add<T>(dx, dx, dy, rows * b.fc2->out_local());
}

template <typename T>
void Tensor3dNet<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer* timer) {
  const int64_t classes = config_.classes;
  Communicator& group = grid_.axis(logits_axis_);
  const int64_t c = (classes + group.size() - 1) / group.size();
  device_.softmax_xent_backward<T>(grad_logits_.data(), probs_.data(), labels_.data(), rows,
                                   classes, 1.0 / static_cast<double>(global_batch));
  local_grad_logits_.zero();  // padding columns: zero gradient
  sliced::copy_2d<T>(device_, local_grad_logits_.data(), c,
                     grad_logits_.data() + group.rank() * c, classes, rows,
                     std::clamp<int64_t>(classes - group.rank() * c, 0, c));
  T* dy = grad_a_.data();
  T* dx = grad_b_.data();
  linear_backward(*classifier_, activations_.back().data(), local_grad_logits_.data(), dy, rows);
  for (size_t l = blocks_.size(); l-- > 0;) {
    if (config_.checkpoint_activations) {
      std::optional<ScopedPhase> timed;
      if (timer) timed.emplace(*timer, Phase::recompute);
      forward_block(l, rows, true);
    }
    backward_block(l, dy, dx, rows);
    std::swap(dx, dy);
  }
  linear_backward(*embed_, inputs_.data(), dy, nullptr, rows);
  deferred_->finish_weight_gradient();
  deferred_ = nullptr;
  // Vector slices hold this depth rank's rows' sums; weight shards are complete per replica.
  if (grid_.depth().size() > 1)
    grid_.depth().all_reduce<T>(vector_grads_.data(), vector_count_);
  if (grid_.data().size() > 1) {
    auto w = grid_.data().all_reduce_async(weight_grads_.data(), weight_grads_.data(),
                                           weight_count_, data_type_of<T>());
    grid_.data().all_reduce<T>(vector_grads_.data(), vector_count_);
    w->wait();
  }
}

template <typename T>
std::vector<int32_t> Tensor3dNet<T>::predictions(int64_t rows) const {
  return predicted_classes(device_, probs_.data(), rows, config_.classes);
}

template class Tensor3dNet<float>;
template class Tensor3dNet<double>;

}  // namespace mlps
