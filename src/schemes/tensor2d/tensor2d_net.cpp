#include "src/schemes/tensor2d/tensor2d_net.h"

#include <algorithm>
#include <optional>

#include "src/model/predicted_classes.h"
#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/sliced_ops.h"

namespace mlps {

template <typename T>
Tensor2dNet<T>::Tensor2dNet(Device& device, Grid2d& grid, const ModelConfig& config,
                            int64_t max_rows, uint64_t seed)
    : device_(device), grid_(grid), config_(config),
      layout_(config, grid.q(), grid.row(), grid.column()),
      local_inputs_(part_size(config.input_features(), grid.q(), grid.column())),
      local_hidden_(part_size(config.hidden, grid.q(), grid.column())),
      local_classes_(part_size(config.classes, grid.q(), grid.column())),
      logit_block_(largest_part(config.classes, grid.q())),
      values_(device, layout_.total()), grads_(device, layout_.total()),
      workspace_(device, config, grid.q(), max_rows),
      block_scratch_(device, config, grid.q(), grid.column(), max_rows) {
  const int q = grid.q();
  values_.upload(layout_.initial_values<T>(seed));
  grads_.zero();
  T* v = values_.data();
  T* g = grads_.data();
  embed_ = std::make_unique<SummaLinear<T>>(device, grid, workspace_, config.input_features(),
                                            config.hidden);
  embed_->bind(layout_, "embed", v, g);
  for (int64_t l = 0; l < config.layers; ++l) {
    blocks_.push_back(std::make_unique<Block2d<T>>(device, grid, workspace_, block_scratch_,
                                                   config, max_rows));
    blocks_.back()->bind(layout_, "block" + std::to_string(l), v, g);
  }
  classifier_ = std::make_unique<SummaLinear<T>>(device, grid, workspace_, config.hidden,
                                                 config.classes);
  classifier_->bind(layout_, "classifier", v, g);

  inputs_ = Buffer<T>(device, max_rows * local_inputs_);
  labels_ = Buffer<int32_t>(device, max_rows);
  for (int64_t l = 0; l <= config.layers; ++l)
    activations_.emplace_back(device, max_rows * local_hidden_);
  const int64_t saved_sets =
      config.checkpoint_activations ? std::min<int64_t>(config.layers, 1) : config.layers;
  for (int64_t l = 0; l < saved_sets; ++l)
    saved_.emplace_back(device, config, q, grid.column(), max_rows);
  // Sent padded to the largest block (an all-gather needs equal counts); the padding is never
  // read, zeroed only so that no uninitialised memory travels.
  local_logits_ = Buffer<T>(device, max_rows * logit_block_);
  local_logits_.zero();
  if (q > 1) gathered_logits_ = Buffer<T>(device, q * max_rows * logit_block_);
  logits_ = Buffer<T>(device, max_rows * config.classes);
  probs_ = Buffer<T>(device, max_rows * config.classes);
  row_loss_ = Buffer<T>(device, max_rows);
  grad_logits_ = Buffer<T>(device, max_rows * config.classes);
  local_grad_logits_ = Buffer<T>(device, max_rows * local_classes_);
  grad_a_ = Buffer<T>(device, max_rows * local_hidden_);
  grad_b_ = Buffer<T>(device, max_rows * local_hidden_);
}

template <typename T>
double Tensor2dNet<T>::forward(const HostBatch& batch) {
  const int64_t rows = batch.rows;
  const int64_t classes = config_.classes;
  // Feature block j of every sample.
  staged_inputs_.resize(static_cast<size_t>(rows * local_inputs_));
  const int64_t first = part_first(batch.features, grid_.q(), grid_.column());
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(batch.pixels.begin() + r * batch.features + first, local_inputs_,
                staged_inputs_.begin() + r * local_inputs_);
  device_.to_device(inputs_.data(), staged_inputs_.data(), sizeof(T) * staged_inputs_.size());
  device_.to_device(labels_.data(), batch.labels.data(), sizeof(int32_t) * rows);

  embed_->forward(inputs_.data(), activations_[0].data(), rows);
  for (size_t l = 0; l < blocks_.size(); ++l) forward_block(l, rows);
  classifier_->forward(activations_.back().data(), local_logits_.data(), rows);

  // Every rank of the grid row assembles the full logits of its samples: block p holds
  // [rows × c_p] at p·rows·c_0 (c_p = part_size(classes, q, p)).
  const int q = grid_.q();
  const T* gathered = local_logits_.data();
  if (q > 1) {
    grid_.row_comm().all_gather<T>(local_logits_.data(), gathered_logits_.data(),
                                   rows * logit_block_);
    gathered = gathered_logits_.data();
  }
  for (int p = 0; p < q; ++p) {
    const int64_t c = part_size(classes, q, p);
    sliced::copy_2d<T>(device_, logits_.data() + part_first(classes, q, p), classes,
                       gathered + p * rows * logit_block_, c, rows, c);
  }
  device_.softmax_xent_forward<T>(probs_.data(), row_loss_.data(), logits_.data(),
                                  labels_.data(), rows, classes);
  std::vector<T> losses(static_cast<size_t>(rows));
  device_.to_host(losses.data(), row_loss_.data(), sizeof(T) * losses.size());
  double sum = 0.0;
  for (T value : losses) sum += static_cast<double>(value);
  return sum;
}

template <typename T>
void Tensor2dNet<T>::forward_block(size_t l, int64_t rows) {
  blocks_[l]->forward(activations_[l].data(), activations_[l + 1].data(), rows, saved_for(l));
}

template <typename T>
void Tensor2dNet<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer* timer) {
  const int64_t classes = config_.classes;
  const int64_t c = local_classes_;
  device_.softmax_xent_backward<T>(grad_logits_.data(), probs_.data(), labels_.data(), rows,
                                   classes, 1.0 / static_cast<double>(global_batch));
  // This rank's block of logit columns.
  sliced::copy_2d<T>(device_, local_grad_logits_.data(), c,
                     grad_logits_.data() + part_first(classes, grid_.q(), grid_.column()),
                     classes, rows, c);
  T* dy = grad_a_.data();
  T* dx = grad_b_.data();
  const int last = static_cast<int>(blocks_.size()) + 1;
  classifier_->backward(activations_.back().data(), local_grad_logits_.data(), dy, rows);
  unit_done(last);
  for (size_t l = blocks_.size(); l-- > 0;) {
    if (config_.checkpoint_activations) {
      // Rewrites activations_[l + 1] with the values it holds (block l + 1's backward, its
      // only other reader, is done) and refills the shared saved set.
      std::optional<ScopedPhase> timed;
      if (timer) timed.emplace(*timer, Phase::recompute);
      forward_block(l, rows);
    }
    blocks_[l]->backward(activations_[l].data(), activations_[l + 1].data(), dy, dx, rows,
                         saved_for(l));
    std::swap(dx, dy);
    unit_done(static_cast<int>(l) + 1);
  }
  embed_->backward(inputs_.data(), dy, nullptr, rows);
  unit_done(0);
  finish_gradients();
}

template <typename T>
void Tensor2dNet<T>::unit_done(int unit) {
  const UnitRange& range = layout_.units()[unit];
  T* vectors = grads_.data() + range.vector_offset;
  // A grid column of one rank holds every row's sum already.
  syncing_.push_back({unit, grid_.q() == 1 ? nullptr
                                           : grid_.col_comm().all_reduce_async(
                                                 vectors, vectors, range.vector_count,
                                                 data_type_of<T>())});
  if (!grid_.data_comm()) return;
  // Every unit but the newest has had all its weight reduce-scatters waited for (the next
  // unit's Linears waited before reusing the workspace).
  while (syncing_.size() > 1) {
    sync_over_replicas(syncing_.front());
    syncing_.erase(syncing_.begin());
  }
}

template <typename T>
void Tensor2dNet<T>::sync_over_replicas(UnitSync& sync) {
  if (sync.vectors) {
    sync.vectors->wait();
    sync.vectors.reset();
  }
  if (!grid_.data_comm()) return;
  const UnitRange& range = layout_.units()[sync.unit];
  T* unit = grads_.data() + range.offset;
  replica_sums_.push_back(
      grid_.data_comm()->all_reduce_async(unit, unit, range.count, data_type_of<T>()));
}

template <typename T>
void Tensor2dNet<T>::finish_gradients() {
  workspace_.finish_weight_gradient();
  for (UnitSync& sync : syncing_) sync_over_replicas(sync);
  syncing_.clear();
  for (PendingComm& pending : replica_sums_) pending->wait();
  replica_sums_.clear();
}

template <typename T>
std::vector<int32_t> Tensor2dNet<T>::predictions(int64_t rows) const {
  return predicted_classes(device_, probs_.data(), rows, config_.classes);
}

template class Tensor2dNet<float>;
template class Tensor2dNet<double>;

}  // namespace mlps
