#include "src/schemes/tensor1d/tensor1d_layers.h"

#include <stdexcept>

#include "src/model/replicated_layernorm.h"

namespace mlps {
namespace {

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

  // Gradients are overwritten: tensor1d takes one pass per step.
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool /*accumulate*/) override {
    const int64_t in = in_width(), out = out_width();
    if (shard_.split() == LinearSplit::column && dx) {
      shard_.input_grad(dy, out, dx, in, rows);
      // The partial dX's all-reduce runs while the dW GEMM (which reads neither) does.
      PendingComm pending = tp_->all_reduce_async(dx, dx, rows * in, data_type_of<T>());
      weight_and_bias(x, dy, rows);
      pending->wait();
      return;
    }
    weight_and_bias(x, dy, rows);
    if (dx) shard_.input_grad(dy, out, dx, in, rows);
  }

 private:
  void weight_and_bias(const T* x, const T* dy, int64_t rows) {
    shard_.weight_grad(x, in_width(), dy, out_width(), rows);
    shard_.bias_grad(dy, rows);
  }
  ShardedLinear<T> shard_;
  Communicator* tp_;
};

}  // namespace

template <typename T>
Tensor1dLayers<T>::Tensor1dLayers(Device& device, const Tensor1dPlan& plan, int tp_rank,
                                  Communicator* tp, Storage storage)
    : device_(device), plan_(plan), tp_rank_(tp_rank), tp_(tp), storage_(std::move(storage)),
      norms_(device, ParameterStorage::external) {}

template <typename T>
std::unique_ptr<Linear<T>> Tensor1dLayers<T>::linear(const std::string& name, int64_t /*in*/,
                                                     int64_t /*out*/) {
  for (const PlannedLinear& planned : plan_.linears) {
    if (planned.shape.name != name) continue;
    auto layer = std::make_unique<Tensor1dLinear<T>>(device_, planned, tp_rank_, tp_);
    const ShardPointers<T> w = storage_(name + ".weight"), b = storage_(name + ".bias");
    layer->shard().bind(w.value, w.grad, b.value, b.grad);
    return layer;
  }
  throw std::logic_error("tensor1d: the plan has no Linear " + name);
}

template <typename T>
std::unique_ptr<LayerNorm<T>> Tensor1dLayers<T>::layer_norm(const std::string& name,
                                                            int64_t features) {
  auto view = [&](const std::string& tensor, InitKind init) -> Parameter<T>& {
    Parameter<T>& p = norms_.add(tensor, 1, features, init, features);
    const ShardPointers<T> s = storage_(tensor);
    p.value = Buffer<T>::view(device_, s.value, features);
    p.grad = Buffer<T>::view(device_, s.grad, features);
    return p;
  };
  Parameter<T>& gamma = view(name + ".weight", InitKind::ones);
  Parameter<T>& beta = view(name + ".bias", InitKind::zeros);
  return std::make_unique<ReplicatedLayerNorm<T>>(device_, gamma, beta);
}

template <typename T>
int64_t Tensor1dLayers<T>::input_first() const {
  return ShardedLinear<T>(device_, plan_.embed(), tp_rank_, plan_.tp).in_offset();
}

template <typename T>
LogitSplit Tensor1dLayers<T>::logits() const {
  LogitSplit split;
  if (plan_.classifier().split != LinearSplit::column) return split;
  split.group = tp_;
  for (int t = 0; t < plan_.tp; ++t) {
    const ShardedLinear<T> shard(device_, plan_.classifier(), t, plan_.tp);
    split.first.push_back(shard.out_offset());
    split.count.push_back(shard.local_out());
    split.width.push_back(shard.local_out());
    split.block = shard.local_out();
  }
  return split;
}

template class Tensor1dLayers<float>;
template class Tensor1dLayers<double>;

}  // namespace mlps
