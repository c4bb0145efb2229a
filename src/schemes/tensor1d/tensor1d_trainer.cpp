#include "src/schemes/tensor1d/tensor1d_trainer.h"

#include <algorithm>
#include <stdexcept>

#include "src/model/replicated_layernorm.h"
#include "src/schemes/named_tensors.h"
#include "src/schemes/tensor1d/sequence_parallel_layers.h"

namespace mlps {
namespace {

// Rank t's block of each tensor: a column-parallel Linear's output features (weight rows, bias
// columns), a row-parallel one's input features (weight columns; the bias stays whole).
ShardLayout tensor1d_layout(const Tensor1dGrid& plan, int tp_rank) {
  return ShardLayout(plan.model, [&](TensorShard& t) {
    const PlannedLinear* linear = plan.linear_of(t.name);
    if (!linear || linear->split == LinearSplit::replicated) return;
    const bool column = linear->split == LinearSplit::column;
    if (!column && !t.matrix) return;
    int64_t& first = column && t.matrix ? t.row0 : t.col0;
    int64_t& count = column && t.matrix ? t.rows : t.cols;
    count /= plan.tp;
    first = tp_rank * count;
  });
}

template <typename T>
class Tensor1dLinear : public Linear<T> {
 public:
  Tensor1dLinear(Device& device, const PlannedLinear& planned, int tp_rank, Communicator* tp)
      : shard_(device, planned, tp_rank, tp ? tp->size() : 1), tp_(tp) {}
  ShardedLinear<T>& shard() { return shard_; }
  int64_t in_width() const override { return shard_.local_in(); }
  int64_t out_width() const override {
    return shard_.split() == LinearSplit::column ? shard_.local_out() : shard_.out();
  }

  void forward(const T* x, T* y, int64_t rows, bool /*backward_next*/) override {
    shard_.multiply(x, in_width(), y, out_width(), rows);
    // The output all-reduce is blocking: the next op needs it.
    if (shard_.split() == LinearSplit::row) tp_->all_reduce(y, rows * out_width());
    shard_.add_bias(y, rows);
  }

  // Gradients are overwritten, or added into those the last update zeroed (accumulate).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) override {
    const int64_t in = in_width(), out = out_width();
    if (shard_.split() == LinearSplit::column && dx) {
      shard_.input_grad(dy, out, dx, in, rows);
      // The partial dX's all-reduce runs while the dW GEMM (which reads neither) does.
      PendingComm pending = tp_->all_reduce_async(dx, dx, rows * in, data_type_of<T>());
      weight_and_bias(x, dy, rows, accumulate);
      pending->wait();
      return;
    }
    weight_and_bias(x, dy, rows, accumulate);
    if (dx) shard_.input_grad(dy, out, dx, in, rows);
  }

 private:
  void weight_and_bias(const T* x, const T* dy, int64_t rows, bool accumulate) {
    shard_.weight_grad(x, in_width(), dy, out_width(), rows, accumulate);
    shard_.bias_grad(dy, rows, accumulate);
  }
  ShardedLinear<T> shard_;
  Communicator* tp_;
};

}  // namespace

template <typename T>
Tensor1dTrainer<T>::Tensor1dTrainer(const TrainerSetup& s, const Tensor1dGrid& plan, int dp)
    : ForwardBackwardTrainer<T>(s), plan_(plan),
      grid_({{"data", dp}, {"tensor", plan.tp}}, s.world), tp_rank_(grid_.coordinate("tensor")),
      dp_rank_(grid_.coordinate("data")), dp_(dp), layout_(tensor1d_layout(plan, tp_rank_)) {
  if (plan.tp > 1) tp_comm_ = grid_.communicator("tensor", s.backend, device_, "tp", log_);
  if (dp > 1) data_comm_ = grid_.communicator("data", s.backend, device_, "data", log_,
                                                 CommRole::weight_gradients);
  const int64_t max_rows = pass_rows(plan, (s.global_batch + dp - 1) / dp);
  if (plan.sequence_parallel) {
    tp_grad_comm_ = grid_.communicator("tensor", s.backend, device_, "tp", log_,
                                       CommRole::weight_gradients);
    sequence_scratch_ = Buffer<T>(device_, max_rows * plan.model.hidden);
  }
  // Only this rank's blocks are ever generated.
  values_ = Buffer<T>(device_, layout_.total());
  grads_ = Buffer<Acc<T>>(device_, layout_.total());
  grads_.zero();
  // Typed storage: the fp32 master starts from the fp32 initial values, as the emulation's.
  std::vector<Acc<T>> master_start = layout_.initial_values<Acc<T>>(s.seed);
  values_.upload(stored_from<T>(master_start));
  if constexpr (!is_16bit_v<T>) master_start = {};  // float and double: the values themselves
  model_ = std::make_unique<FcNet<T>>(device_, plan_.model, max_rows,
                                      static_cast<LayerSet<T>&>(*this), logits(), input_first());
  model_->set_hooks(this);
  optimizer_.add(values_.data(), grads_.data(), values_.size(),
                 master_start.empty() ? nullptr : master_start.data());
  optimizer_.zero_gradients_after_step();  // it holds every gradient: all are zeroed
}

template <typename T>
Tensor1dTrainer<T>::~Tensor1dTrainer() {
  pending_.clear();
  tp_comm_.reset();
  tp_grad_comm_.reset();
  data_comm_.reset();
}

template <typename T>
std::string Tensor1dTrainer<T>::grid() const {
  return "tp=" + std::to_string(plan_.tp) + ",dp=" + std::to_string(dp_) +
         (plan_.sequence_parallel ? ",sp=1" : "");
}

template <typename T>
BatchSlice Tensor1dTrainer<T>::batch_slice(int64_t global_rows) const {
  return even_batch_slice(global_rows, dp_rank_, dp_);
}

template <typename T>
std::string Tensor1dTrainer<T>::comm_backend() const {
  if (tp_comm_) return tp_comm_->backend();
  if (data_comm_) return data_comm_->backend();
  return "none";
}

template <typename T>
void Tensor1dTrainer<T>::after_backward(int unit) {
  if (!data_comm_) return;
  const UnitRange& range = layout_.units()[unit];
  Acc<T>* grads = grads_.data() + range.offset;
  pending_.push_back(
      data_comm_->all_reduce_async(grads, grads, range.count, data_type_of<Acc<T>>()));
}

template <typename T>
void Tensor1dTrainer<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  model_->set_timer(&timer);
  model_->backward(rows, global_batch, optimizer_.gradients_zeroed());
  for (auto& p : pending_) p->wait();
  pending_.clear();
}

template <typename T>
std::map<std::string, double> Tensor1dTrainer<T>::analytic_bytes(int64_t global_batch,
                                                                 bool inference,
                                                                 CommCalls* calls) const {
  // Mixed precision carries float payloads as 16-bit values (the data group in fp32 with
  // --fp32-grad-comm), typed 16-bit ones as they are: each group's bytes per element are its
  // wire's.
  const auto element_bytes = [](const Communicator* c) -> size_t {
    return c ? wire_bytes(c->wire_format(), sizeof(Acc<T>)) : sizeof(T);
  };
  auto bytes = tensor1d_comm_bytes(plan_, batch_slice(global_batch).count,
                                   element_bytes(tp_comm_.get()), dp_, inference,
                                   element_bytes(tp_grad_comm_.get()), calls);
  if (bytes.count("allreduce:data"))
    bytes["allreduce:data"] = static_cast<double>(local_parameter_count(plan_)) *
                              static_cast<double>(element_bytes(data_comm_.get()));
  return bytes;
}

template <typename T>
std::vector<NamedTensor> Tensor1dTrainer<T>::gather_parameters() {
  const auto values = values_.download();
  std::vector<HeldRun> runs;
  for (const TensorShard& t : layout_.tensors()) {
    // Replica 0 owns the parameters: a split tensor's blocks, tp rank 0's replicated ones.
    const bool split = t.rows != t.global_rows || t.cols != t.global_cols;
    const bool owner = dp_rank_ == 0 && (split || tp_rank_ == 0);
    runs.push_back({t.name, t.global_rows, t.global_cols, t.row0, t.col0,
                    std::max<int64_t>(t.cols, 1), 0, t.offset, t.size(), owner});
  }
  std::vector<double> wide(values.size());
  std::transform(values.begin(), values.end(), wide.begin(),
                 [](T v) { return static_cast<double>(widen(v)); });
  auto gathered = gather_held_tensors(runs, wide, grid_.world(), /*compare_copies=*/true);
  replica_divergence_ = gathered.copy_spread;
  most_divergent_tensor_ = gathered.most_spread;
  return std::move(gathered.tensors);
}

template <typename T>
std::unique_ptr<Linear<T>> Tensor1dTrainer<T>::linear(const std::string& name, int64_t /*in*/,
                                                     int64_t /*out*/) {
  for (const PlannedLinear& planned : plan_.linears) {
    if (planned.shape.name != name) continue;
    const int64_t w = layout_.find(name + ".weight").offset;
    const int64_t b = layout_.find(name + ".bias").offset;
    if (plan_.sequence_parallel) {
      auto layer = std::make_unique<SequenceParallelLinear<T>>(
          device_, planned, &planned == &plan_.classifier(), tp_rank_, *tp_comm_, *tp_grad_comm_,
          sequence_scratch_.data());
      layer->bind(values_.data() + w, grads_.data() + w, values_.data() + b, grads_.data() + b);
      return layer;
    }
    auto layer = std::make_unique<Tensor1dLinear<T>>(device_, planned, tp_rank_, tp_comm_.get());
    layer->shard().bind(values_.data() + w, grads_.data() + w, values_.data() + b,
                        grads_.data() + b);
    return layer;
  }
  throw std::logic_error("tensor1d: the plan has no Linear " + name);
}

template <typename T>
std::unique_ptr<LayerNorm<T>> Tensor1dTrainer<T>::layer_norm(const std::string& name,
                                                            int64_t features) {
  auto view = [&](const std::string& tensor, InitKind init) -> Parameter<T>& {
    Parameter<T>& p = norms_.add(tensor, 1, features, init, features);
    const int64_t offset = layout_.find(tensor).offset;
    p.value = Buffer<T>::view(device_, values_.data() + offset, features);
    p.grad = Buffer<Acc<T>>::view(device_, grads_.data() + offset, features);
    return p;
  };
  Parameter<T>& gamma = view(name + ".weight", InitKind::ones);
  Parameter<T>& beta = view(name + ".bias", InitKind::zeros);
  if (plan_.sequence_parallel)
    return std::make_unique<SequenceParallelLayerNorm<T>>(device_, gamma, beta, *tp_comm_,
                                                          *tp_grad_comm_,
                                                          sequence_scratch_.data());
  return std::make_unique<ReplicatedLayerNorm<T>>(device_, gamma, beta);
}

template <typename T>
int64_t Tensor1dTrainer<T>::input_first() const {
  return ShardedLinear<T>(device_, plan_.embed(), tp_rank_, plan_.tp).in_offset();
}

template <typename T>
LogitSplit Tensor1dTrainer<T>::logits() const {
  LogitSplit split;
  if (plan_.classifier().split != LinearSplit::column) return split;
  split.group = tp_comm_.get();
  for (int t = 0; t < plan_.tp; ++t) {
    const ShardedLinear<T> shard(device_, plan_.classifier(), t, plan_.tp);
    split.first.push_back(shard.out_offset());
    split.count.push_back(shard.local_out());
    split.width.push_back(shard.local_out());
    split.block = shard.local_out();
  }
  return split;
}

template class Tensor1dTrainer<float>;
template class Tensor1dTrainer<double>;
template class Tensor1dTrainer<bf16>;
template class Tensor1dTrainer<fp16>;

}  // namespace mlps
