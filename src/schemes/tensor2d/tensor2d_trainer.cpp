#include "src/schemes/tensor2d/tensor2d_trainer.h"

#include <algorithm>

#include "src/schemes/named_tensors.h"
#include "src/base/balanced_split.h"
#include "src/schemes/tensor2d/sliced_layernorm.h"

namespace mlps {
namespace {

// The row group of replica d, grid row i is part d·q + i of the batch's dp·q parts.
int64_t row_groups(const Tensor2dGrid& shape) { return int64_t{shape.dp} * shape.q; }

}  // namespace

template <typename T>
Tensor2dTrainer<T>::Tensor2dTrainer(const TrainerSetup& s, const Tensor2dGrid& shape)
    : ForwardBackwardTrainer<T>(s),
      shape_(check_grid_fits(s.model, s.global_batch, shape)),
      grid_({{"data", shape.dp}, {"rows", shape.q}, {"cols", shape.q}}, s.world),
      replica_(grid_.coordinate("data")), row_(grid_.coordinate("rows")),
      column_(grid_.coordinate("cols")),
      // A grid row's ranks differ in their column, and a column's in their row.
      row_comm_(grid_.communicator("cols", s.backend, this->device_, "row", this->log_)),
      col_comm_(grid_.communicator("rows", s.backend, this->device_, "col", this->log_)),
      data_comm_(shape.dp > 1 ? grid_.communicator("data", s.backend, this->device_, "data",
                                                   this->log_, CommRole::weight_gradients)
                              : nullptr),
      optimizer_config_(s.optimizer), model_(s.model),
      max_rows_(largest_part(s.global_batch, row_groups(shape))),
      layout_(s.model, shape_.q, row_, column_),
      values_(this->device_, layout_.total()), grads_(this->device_, layout_.total()),
      workspace_(this->device_, s.model, shape_.q, max_rows_) {
  // Typed storage: the fp32 master starts from the fp32 initial values, as the emulation's.
  std::vector<Acc<T>> master_start = layout_.initial_values<Acc<T>>(s.seed);
  values_.upload(stored_from<T>(master_start));
  if constexpr (!is_16bit_v<T>) master_start = {};  // float and double: the values themselves
  grads_.zero();
  net_ = std::make_unique<FcNet<T>>(
      this->device_, s.model, max_rows_, static_cast<LayerSet<T>&>(*this), logits(),
      part_first(s.model.input_features(), shape_.q, column_));
  net_->set_hooks(this);
  this->optimizer_.add(values_.data(), grads_.data(), layout_.total(),
                       master_start.empty() ? nullptr : master_start.data());
}

template <typename T>
BatchSlice Tensor2dTrainer<T>::batch_slice(int64_t global_rows) const {
  const int64_t groups = row_groups({shape_.q, shape_.dp});
  const int64_t group = int64_t{replica_} * shape_.q + row_;
  return {part_first(global_rows, groups, group), part_size(global_rows, groups, group)};
}

template <typename T>
std::vector<NamedTensor> Tensor2dTrainer<T>::gather_parameters() {
  const auto values = values_.download();
  std::vector<HeldRun> runs;
  for (const TensorShard& t : layout_.tensors()) {
    // Replica 0 owns the parameters; a vector part is the same on every grid row.
    const bool owner = replica_ == 0 && (t.matrix || row_ == 0);
    runs.push_back({t.name, t.global_rows, t.global_cols, t.row0, t.col0,
                    std::max<int64_t>(t.cols, 1), 0, t.offset, t.size(), owner});
  }
  std::vector<double> wide(values.size());
  std::transform(values.begin(), values.end(), wide.begin(),
                 [](T v) { return static_cast<double>(widen(v)); });
  return gather_held_tensors(runs, wide, grid_.world()).tensors;
}

template <typename T>
std::unique_ptr<Linear<T>> Tensor2dTrainer<T>::linear(const std::string& name, int64_t in,
                                                      int64_t out) {
  auto layer = std::make_unique<SummaLinear<T>>(this->device_, *row_comm_, *col_comm_, workspace_,
                                                 in, out);
  layer->bind(layout_, name, values_.data(), grads_.data());
  return layer;
}

template <typename T>
std::unique_ptr<LayerNorm<T>> Tensor2dTrainer<T>::layer_norm(const std::string& name,
                                                             int64_t features) {
  auto norm =
      std::make_unique<SlicedLayerNorm<T>>(this->device_, *row_comm_, features, max_rows_);
  const int64_t g = layout_.find(name + ".weight").offset, b = layout_.find(name + ".bias").offset;
  norm->bind(values_.data() + g, values_.data() + b, grads_.data() + g, grads_.data() + b);
  return norm;
}

template <typename T>
LogitSplit Tensor2dTrainer<T>::logits() {
  // Every rank of a grid row assembles its samples' full logits from the q column blocks.
  LogitSplit split;
  const int q = shape_.q;
  if (q == 1) return split;
  split.group = row_comm_.get();
  split.block = largest_part(model_.classes, q);
  for (int p = 0; p < q; ++p) {
    split.first.push_back(part_first(model_.classes, q, p));
    split.count.push_back(part_size(model_.classes, q, p));
    split.width.push_back(part_size(model_.classes, q, p));
  }
  return split;
}

template <typename T>
void Tensor2dTrainer<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  net_->set_timer(&timer);
  net_->backward(rows, global_batch, false);
  workspace_.finish_weight_gradient();
  for (UnitSync& sync : syncing_) sync_over_replicas(sync);
  syncing_.clear();
  for (PendingComm& pending : replica_sums_) pending->wait();
  replica_sums_.clear();
}

template <typename T>
void Tensor2dTrainer<T>::after_backward(int unit) {
  const UnitRange& range = layout_.units()[unit];
  Acc<T>* vectors = grads_.data() + range.vector_offset;
  // A grid column of one rank holds every row's sum already.
  syncing_.push_back({unit, shape_.q == 1 ? nullptr
                                           : col_comm_->all_reduce_async(
                                                 vectors, vectors, range.vector_count,
                                                 data_type_of<Acc<T>>())});
  if (!data_comm_) return;
  // Every unit but the newest has had all its weight reduce-scatters waited for (the next
  // unit's Linears waited before reusing the workspace).
  while (syncing_.size() > 1) {
    sync_over_replicas(syncing_.front());
    syncing_.erase(syncing_.begin());
  }
}

template <typename T>
void Tensor2dTrainer<T>::sync_over_replicas(UnitSync& sync) {
  complete(sync.vectors);
  if (!data_comm_) return;
  const UnitRange& range = layout_.units()[sync.unit];
  Acc<T>* unit = grads_.data() + range.offset;
  replica_sums_.push_back(
      data_comm_->all_reduce_async(unit, unit, range.count, data_type_of<Acc<T>>()));
}

template class Tensor2dTrainer<float>;
template class Tensor2dTrainer<double>;
template class Tensor2dTrainer<bf16>;
template class Tensor2dTrainer<fp16>;

}  // namespace mlps
