#include "src/schemes/tensor3d/tensor3d_trainer.h"

#include <algorithm>
#include <stdexcept>

#include "src/model/serial_net.h"

namespace mlps {
template <typename T>
Tensor3dTrainer<T>::Tensor3dTrainer(const TrainerSetup& s, const Tensor3dGrid& shape,
                                    const Overlap3d& overlap)
    : ForwardBackwardTrainer<T>(s),
      shape_(check_shape_divides(s.model, s.global_batch, shape)),
      grid_({{"data", shape.dp}, {"depth", shape.depth}, {"outer", shape.outer},
             {"inner", shape.inner}},
            s.world),
      r_(grid_.coordinate("outer")), c_(grid_.coordinate("inner")),
      d_(grid_.coordinate("depth")), replica_(grid_.coordinate("data")),
      inner_(grid_.communicator("inner", s.backend, this->device_, "inner", this->log_)),
      outer_(grid_.communicator("outer", s.backend, this->device_, "outer", this->log_)),
      depth_(grid_.communicator("depth", s.backend, this->device_, "depth", this->log_)),
      data_(grid_.communicator("data", s.backend, this->device_, "data", this->log_,
                               CommRole::weight_gradients)),
      model_(s.model), max_rows_(s.global_batch / (int64_t{shape.dp} * shape.depth)),
      overlap_(overlap) {
  // The pixels are sharded over the outer axis.
  const int64_t input_first = r_ * (s.model.input_features() / outer_->size());
  net_ = std::make_unique<FcNet<T>>(this->device_, s.model, max_rows_,
                                    static_cast<LayerSet<T>&>(*this), logits(), input_first);
  initialise(s.seed);
  for (size_t i = 0; i < linears_.size(); ++i)
    linears_[i]->set_neighbours(i + 1 < linears_.size() ? linears_[i + 1] : nullptr,
                                i > 0 ? linears_[i - 1] : nullptr);
  scratch_ = std::make_unique<DepthScratch<T>>(this->device_, linears_, depth_->size(),
                                               overlap);
  // Typed storage: the fp32 master starts from the fp32 initial values, as the emulation's.
  auto start = [&](const std::vector<Acc<T>>& wide) {
    return is_16bit_v<T> ? wide.data() : nullptr;
  };
  this->optimizer_.add(weights_.data(), weight_grads_.data(), weights_.size(),
                       start(initial_weights_));
  this->optimizer_.add(vectors_.data(), vector_grads_.data(), vectors_.size(),
                       start(initial_vectors_));
  initial_weights_ = {};
  initial_vectors_ = {};
  this->optimizer_.zero_gradients_after_step();  // it holds every gradient: all are zeroed
}

template <typename T>
BatchSlice Tensor3dTrainer<T>::batch_slice(int64_t global_rows) const {
  return even_batch_slice(global_rows, replica_ * shape_.depth + d_, shape_.dp * shape_.depth);
}

template <typename T>
std::vector<NamedTensor> Tensor3dTrainer<T>::gather_parameters() {
  // One host array: the weight shards, then the vector slices.
  const auto weights = weights_.download();
  const auto vectors = vectors_.download();
  std::vector<double> values;
  for (T v : weights) values.push_back(static_cast<double>(widen(v)));
  for (T v : vectors) values.push_back(static_cast<double>(widen(v)));
  std::vector<HeldRun> runs;
  for (const LocalTensor& t : tensors_) {
    runs.push_back(t);
    if (!t.weight) runs.back().offset += static_cast<int64_t>(weights.size());
  }
  return gather_held_tensors(runs, values, grid_.world()).tensors;
}

template <typename T>
std::unique_ptr<Linear<T>> Tensor3dTrainer<T>::linear(const std::string& name, int64_t in,
                                                  int64_t out) {
  Communicator& in_group = axis(axis_);
  Communicator& out_group = axis(other(axis_));
  auto layer = std::make_unique<Linear3d<T>>(this->device_, in_group, out_group, *depth_, in,
                                             out, overlap_);
  const int64_t shard = layer->shard_elements();
  tensors_.push_back({{name + ".weight", out, in, layer->row0(), layer->col0(), layer->in_width(),
                       d_ * shard, weight_count_, shard, replica_ == 0},
                      true});
  weight_count_ += shard;
  add_vector(name + ".bias", out, out_group);
  axis_ = other(axis_);
  linears_.push_back(layer.get());
  return layer;
}

template <typename T>
std::unique_ptr<LayerNorm<T>> Tensor3dTrainer<T>::layer_norm(const std::string& name,
                                                         int64_t features) {
  Communicator& group = axis(axis_);
  auto norm = std::make_unique<SlicedLayerNorm<T>>(this->device_, group, features, max_rows_);
  norms_.emplace_back(norm.get(), tensors_.size());
  add_vector(name + ".weight", features, group);
  add_vector(name + ".bias", features, group);
  return norm;
}

template <typename T>
void Tensor3dTrainer<T>::add_vector(const std::string& name, int64_t features,
                                    Communicator& group) {
  const int64_t count = (features + group.size() - 1) / group.size();
  // One copy per feature slice: the other plane axis, depth and data hold the same values.
  const bool first_of_others = &group == inner_.get() ? r_ == 0 : c_ == 0;
  tensors_.push_back({{name, 1, features, 0, group.rank() * count, count, 0, vector_count_, count,
                       replica_ == 0 && d_ == 0 && first_of_others},
                      false});
  vector_count_ += count;
}

template <typename T>
LogitSplit Tensor3dTrainer<T>::logits() {
  // The logits are sharded over the other axis than the classifier's input.
  Communicator& group = axis(other(classifier_input_axis(model_)));
  LogitSplit split;
  if (group.size() == 1) return split;
  const int64_t classes = model_.classes, c = (classes + group.size() - 1) / group.size();
  split.group = &group;
  split.block = c;
  for (int p = 0; p < group.size(); ++p) {
    split.first.push_back(p * c);
    split.count.push_back(std::clamp<int64_t>(classes - p * c, 0, c));
    split.width.push_back(c);
  }
  return split;
}

template <typename T>
void Tensor3dTrainer<T>::initialise(uint64_t seed) {
  // FC_Net's ids, names and shapes, in its order (no parameter memory is allocated).
  SerialNet<T> reference(this->device_, model_, 1, ParameterStorage::external);
  if (reference.parameters().size() != tensors_.size())
    throw std::logic_error("tensor3d: FC_Net has a different number of tensors");
  // At the accumulator's width (the typed master's start), stored rounded to T.
  std::vector<Acc<T>> weights(static_cast<size_t>(weight_count_)),
      vectors(static_cast<size_t>(vector_count_));
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const Parameter<T>& p = reference.parameters()[t];
    const LocalTensor& s = tensors_[t];
    if (p.name != s.name || p.rows != s.rows || p.cols != s.cols)
      throw std::logic_error("tensor3d: tensor " + s.name + " is not FC_Net's " + p.name);
    // Exactly this rank's elements, from the counter-based initialiser; past the tensor's end
    // (padding) zero.
    Acc<T>* values = s.weight ? weights.data() : vectors.data();
    for (int64_t k = 0; k < s.count; ++k) {
      const int64_t e = s.first + k, row = s.row0 + e / s.block_cols;
      const int64_t col = s.col0 + e % s.block_cols;
      values[s.offset + k] =
          row < s.rows && col < s.cols
              ? static_cast<Acc<T>>(initial_value(seed, p.tensor_id, p.init, p.fan_in, row, col))
              : Acc<T>(0);
    }
  }
  weights_ = Buffer<T>(this->device_, weight_count_);
  weight_grads_ = Buffer<Acc<T>>(this->device_, weight_count_);
  vectors_ = Buffer<T>(this->device_, vector_count_);
  vector_grads_ = Buffer<Acc<T>>(this->device_, vector_count_);
  weights_.upload(stored_from<T>(weights));
  vectors_.upload(stored_from<T>(vectors));
  initial_weights_ = std::move(weights);
  initial_vectors_ = std::move(vectors);
  weight_grads_.zero();
  vector_grads_.zero();

  // Bind: each Linear owns tensors (weight, bias) in order; a LayerNorm (γ, β) before fc1.
  size_t t = 0;
  for (Linear3d<T>* layer : linears_) {
    while (!tensors_[t].weight) ++t;  // a LayerNorm's γ, β
    const LocalTensor& w = tensors_[t++];
    const LocalTensor& b = tensors_[t++];
    layer->bind(weights_.data() + w.offset, weight_grads_.data() + w.offset,
                vectors_.data() + b.offset, vector_grads_.data() + b.offset);
  }
  for (auto& [norm, gamma] : norms_) {
    const int64_t g = tensors_[gamma].offset, b = tensors_[gamma + 1].offset;
    norm->bind(vectors_.data() + g, vectors_.data() + b, vector_grads_.data() + g,
               vector_grads_.data() + b);
  }
}

template <typename T>
void Tensor3dTrainer<T>::forward(const HostBatch& rows) {
  for (Linear3d<T>* layer : linears_) layer->invalidate();
  net_->queue_forward(rows);
}

template <typename T>
void Tensor3dTrainer<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  net_->set_timer(&timer);
  net_->backward(rows, global_batch, this->optimizer_.gradients_zeroed());
  linears_.front()->finish_weight_gradient();  // the embed's, deferred
  // Vector slices hold this depth rank's rows' sums; weight shards are complete per replica.
  if (depth_->size() > 1)
    depth_->all_reduce<Acc<T>>(vector_grads_.data(), vector_count_);
  if (data_->size() > 1) {
    auto w = data_->all_reduce_async(weight_grads_.data(), weight_grads_.data(),
                                           weight_count_, data_type_of<Acc<T>>());
    data_->all_reduce<Acc<T>>(vector_grads_.data(), vector_count_);
    w->wait();
  }
}

template class Tensor3dTrainer<float>;
template class Tensor3dTrainer<double>;
template class Tensor3dTrainer<bf16>;
template class Tensor3dTrainer<fp16>;

}  // namespace mlps
