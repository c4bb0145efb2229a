#include "src/schemes/tensor2d/tensor2d_net.h"

#include "src/schemes/tensor2d/balanced_split.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"

namespace mlps {

template <typename T>
Tensor2dNet<T>::Tensor2dNet(Device& device, Grid2d& grid, const ModelConfig& config,
                            int64_t max_rows, uint64_t seed)
    : device_(device), grid_(grid), config_(config), max_rows_(max_rows),
      layout_(config, grid.q(), grid.row(), grid.column()),
      values_(device, layout_.total()), grads_(device, layout_.total()),
      workspace_(device, config, grid.q(), max_rows) {
  values_.upload(layout_.initial_values<T>(seed));
  grads_.zero();
  net_ = std::make_unique<FcNet<T>>(device, config, max_rows, static_cast<LayerSet<T>&>(*this),
                                    logits(),
                                    part_first(config.input_features(), grid.q(), grid.column()));
  net_->set_hooks(this);
}

template <typename T>
std::unique_ptr<Linear<T>> Tensor2dNet<T>::linear(const std::string& name, int64_t in,
                                                  int64_t out) {
  auto layer = std::make_unique<SummaLinear<T>>(device_, grid_, workspace_, in, out);
  layer->bind(layout_, name, values_.data(), grads_.data());
  return layer;
}

template <typename T>
std::unique_ptr<LayerNorm<T>> Tensor2dNet<T>::layer_norm(const std::string& name,
                                                         int64_t features) {
  auto norm = std::make_unique<SlicedLayerNorm<T>>(device_, grid_.row_comm(), features, max_rows_);
  const int64_t g = layout_.find(name + ".weight").offset, b = layout_.find(name + ".bias").offset;
  norm->bind(values_.data() + g, values_.data() + b, grads_.data() + g, grads_.data() + b);
  return norm;
}

template <typename T>
LogitSplit Tensor2dNet<T>::logits() {
  // Every rank of a grid row assembles its samples' full logits from the q column blocks.
  LogitSplit split;
  const int q = grid_.q();
  if (q == 1) return split;
  split.group = &grid_.row_comm();
  split.block = largest_part(config_.classes, q);
  for (int p = 0; p < q; ++p) {
    split.first.push_back(part_first(config_.classes, q, p));
    split.count.push_back(part_size(config_.classes, q, p));
    split.width.push_back(part_size(config_.classes, q, p));
  }
  return split;
}

template <typename T>
void Tensor2dNet<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer* timer) {
  net_->set_timer(timer);
  net_->backward(rows, global_batch, false);
  finish_gradients();
}

template <typename T>
void Tensor2dNet<T>::after_backward(int unit) {
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

template class Tensor2dNet<float>;
template class Tensor2dNet<double>;

}  // namespace mlps
