#include "src/model/fc_net.h"

#include <algorithm>
#include <optional>

#include "src/model/predicted_classes.h"
#include "src/model/sliced_ops.h"

namespace mlps {

template <typename T>
FcNet<T>::FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
                LogitSplit logits, int64_t input_first)
    : device_(device), config_(config), max_rows_(max_rows), input_first_(input_first),
      split_(std::move(logits)) {
  embed_ = layers.linear("embed", config.input_features(), config.hidden);
  layers.unit_made(0);
  for (int64_t l = 0; l < config.layers; ++l) {
    blocks_.push_back(
        std::make_unique<MlpBlock<T>>(device, layers, "block" + std::to_string(l), config));
    layers.unit_made(static_cast<int>(l) + 1);
  }
  classifier_ = layers.linear("classifier", config.hidden, config.classes);
  layers.unit_made(static_cast<int>(config.layers) + 1);

  inputs_ = Buffer<T>(device, max_rows * embed_->in_width());
  labels_ = Buffer<int32_t>(device, max_rows);
  int64_t widest = embed_->out_width();
  activations_.emplace_back(device, max_rows * embed_->out_width());
  for (const auto& b : blocks_) {
    activations_.emplace_back(device, max_rows * b->out_width());
    widest = std::max({widest, b->in_width(), b->out_width()});
  }
  const size_t sets = config.checkpoint_activations ? std::min<size_t>(blocks_.size(), 1)
                                                    : blocks_.size();
  for (size_t l = 0; l < sets; ++l) saved_.push_back(blocks_[l]->make_activations(max_rows));
  scratch_ = make_block_scratch(device, blocks_, max_rows);
  grad_a_ = Buffer<T>(device, max_rows * widest);
  grad_b_ = Buffer<T>(device, max_rows * widest);
  const int64_t classes = config.classes;
  logits_ = Buffer<T>(device, max_rows * classes);
  probs_ = Buffer<T>(device, max_rows * classes);
  row_loss_ = Buffer<T>(device, max_rows);
  grad_logits_ = Buffer<T>(device, max_rows * classes);
  if (split_.group) {
    // Sent padded to the widest block (an all-gather needs equal counts); the padding is never
    // read, zeroed only so that no uninitialised memory travels.
    local_logits_ = Buffer<T>(device, max_rows * split_.block);
    local_logits_.zero();
    gathered_logits_ = Buffer<T>(device, split_.group->size() * max_rows * split_.block);
    local_grad_logits_ = Buffer<T>(device, max_rows * classifier_->out_width());
    local_grad_logits_.zero();  // padding columns: zero gradient
  }
}

template <typename T>
template <typename Pass>
void FcNet<T>::run_unit(int unit, bool backward, Pass pass) {
  if (hooks_) backward ? hooks_->before_backward(unit) : hooks_->before_forward(unit);
  pass();
  if (hooks_) backward ? hooks_->after_backward(unit) : hooks_->after_forward(unit);
}

template <typename T>
void FcNet<T>::forward_block(size_t l, int64_t rows, bool backward_next) {
  blocks_[l]->forward(activations_[l].data(), activations_[l + 1].data(), rows, saved(l),
                      backward_next);
}

template <typename T>
double FcNet<T>::forward(const HostBatch& batch) {
  const int64_t width = embed_->in_width();
  staged_inputs_.resize(static_cast<size_t>(batch.rows * width));
  for (int64_t r = 0; r < batch.rows; ++r)
    std::copy_n(batch.pixels.begin() + r * batch.features + input_first_, width,
                staged_inputs_.begin() + r * width);
  return forward(staged_inputs_.data(), batch.labels.data(), batch.rows);
}

template <typename T>
double FcNet<T>::forward(const T* host_inputs, const int32_t* host_labels, int64_t rows) {
  const int64_t classes = config_.classes;
  device_.to_device(inputs_.data(), host_inputs,
                    sizeof(T) * static_cast<size_t>(rows * embed_->in_width()));
  device_.to_device(labels_.data(), host_labels, sizeof(int32_t) * static_cast<size_t>(rows));

  run_unit(0, false, [&] { embed_->forward(inputs_.data(), activations_[0].data(), rows, false); });
  for (size_t l = 0; l < blocks_.size(); ++l)
    run_unit(static_cast<int>(l) + 1, false, [&] { forward_block(l, rows, false); });
  run_unit(unit_count() - 1, false, [&] {
    T* y = split_.group ? local_logits_.data() : logits_.data();
    classifier_->forward(activations_.back().data(), y, rows, false);
  });
  if (split_.group) {
    // Every rank of the group assembles the full logits: block p at p·rows·block.
    const int parts = split_.group->size();
    split_.group->all_gather<T>(local_logits_.data(), gathered_logits_.data(), rows * split_.block);
    for (int p = 0; p < parts; ++p)
      sliced::copy_2d<T>(device_, logits_.data() + split_.first[p], classes,
                         gathered_logits_.data() + p * rows * split_.block, split_.width[p], rows,
                         split_.count[p]);
  }
  device_.softmax_xent_forward<T>(probs_.data(), row_loss_.data(), logits_.data(), labels_.data(),
                                  rows, classes);
  std::vector<T> losses(static_cast<size_t>(rows));
  device_.to_host(losses.data(), row_loss_.data(), sizeof(T) * losses.size());
  double sum = 0.0;
  for (T v : losses) sum += static_cast<double>(v);
  return sum;
}

template <typename T>
const T* FcNet<T>::local_grad_logits(int64_t rows) {
  if (!split_.group) return grad_logits_.data();
  const int p = split_.group->rank();
  sliced::copy_2d<T>(device_, local_grad_logits_.data(), split_.width[p],
                     grad_logits_.data() + split_.first[p], config_.classes, rows,
                     split_.count[p]);
  return local_grad_logits_.data();
}

template <typename T>
void FcNet<T>::backward(int64_t rows, int64_t global_batch, bool accumulate) {
  device_.softmax_xent_backward<T>(grad_logits_.data(), probs_.data(), labels_.data(), rows,
                                   config_.classes, 1.0 / static_cast<double>(global_batch));
  T* dy = grad_a_.data();
  T* dx = grad_b_.data();
  run_unit(unit_count() - 1, true, [&] {
    classifier_->backward(activations_.back().data(), local_grad_logits(rows), dy, rows,
                          accumulate);
  });
  for (size_t l = blocks_.size(); l-- > 0;) {
    run_unit(static_cast<int>(l) + 1, true, [&] {
      if (config_.checkpoint_activations) {
        // Rewrites the block's output with the values it holds (the next unit's backward, its
        // only other reader, is done) and refills the shared saved set.
        std::optional<ScopedPhase> timed;
        if (timer_) timed.emplace(*timer_, Phase::recompute);
        forward_block(l, rows, true);
      }
      blocks_[l]->backward(activations_[l].data(), activations_[l + 1].data(), dy, dx, rows,
                           accumulate, saved(l), scratch_);
    });
    std::swap(dx, dy);
  }
  run_unit(0, true, [&] { embed_->backward(inputs_.data(), dy, nullptr, rows, accumulate); });
}

template <typename T>
std::vector<int32_t> FcNet<T>::predictions(int64_t rows) const {
  return predicted_classes(device_, probs_.data(), rows, config_.classes);
}

template class FcNet<float>;
template class FcNet<double>;

}  // namespace mlps
