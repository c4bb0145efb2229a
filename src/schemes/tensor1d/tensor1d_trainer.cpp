#include "src/schemes/tensor1d/tensor1d_trainer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "src/model/serial_net.h"
#include "src/schemes/data_parallel_base.h"
#include "src/schemes/named_tensors.h"

namespace mlps {
template <typename T>
Tensor1dTrainer<T>::Tensor1dTrainer(const TrainerSetup& s, const Tensor1dPlan& plan, int dp)
    : ForwardBackwardTrainer<T>(s), plan_(plan),
      grid_({{"data", dp}, {"tensor", plan.tp}}, s.world), tp_rank_(grid_.coordinate("tensor")),
      dp_rank_(grid_.coordinate("data")), dp_(dp) {
  if (plan.tp > 1) tp_comm_ = grid_.communicator("tensor", s.backend, device_, "tp", log_);
  if (dp > 1) data_comm_ = grid_.communicator("data", s.backend, device_, "data", log_,
                                                 CommRole::weight_gradients);
  const int64_t max_rows = (s.global_batch + dp - 1) / dp;
  lay_out_shards(s.seed);
  layers_ = std::make_unique<Tensor1dLayers<T>>(
      device_, plan_, tp_rank_, tp_comm_.get(), [this](const std::string& name) {
        for (const Shard& s : shards_)
          if (s.name == name)
            return ShardPointers<T>{values_.data() + s.offset, grads_.data() + s.offset};
        throw std::logic_error("tensor1d: no parameter " + name);
      });
  model_ = std::make_unique<FcNet<T>>(device_, plan_.model, max_rows, *layers_, layers_->logits(),
                                      layers_->input_first());
  model_->set_hooks(this);
  optimizer_.add(values_.data(), grads_.data(), values_.size());
}

template <typename T>
Tensor1dTrainer<T>::~Tensor1dTrainer() {
  pending_.clear();
  tp_comm_.reset();
  data_comm_.reset();
}

template <typename T>
void Tensor1dTrainer<T>::lay_out_shards(uint64_t seed) {
  // FcNet itself names the tensors and fixes their ids, shapes and units; built with external
  // storage on a scratch device, it allocates no parameter memory and none of this rank's.
  Device scratch(DeviceKind::cpu);
  SerialNet<T> reference(scratch, plan_.model, 1, ParameterStorage::external);
  const int tp = plan_.tp;
  int64_t offset = 0;
  for (int u = 0; u < reference.unit_count(); ++u) {
    unit_first_.push_back(offset);
    for (const Parameter<T>* p : reference.unit_parameters(u)) {
      Shard s{p->name, p->tensor_id, p->init, p->fan_in, p->rows, p->cols,
              0, p->rows, 0, p->cols, offset};
      const PlannedLinear* linear = plan_.linear_of(p->name);
      const bool is_bias = p->rows == 1;
      if (linear && linear->split == LinearSplit::column) {
        // Output features split: weight rows, or the bias's columns.
        if (is_bias) {
          s.local_cols = p->cols / tp;
          s.col0 = tp_rank_ * s.local_cols;
        } else {
          s.local_rows = p->rows / tp;
          s.row0 = tp_rank_ * s.local_rows;
        }
      } else if (linear && linear->split == LinearSplit::row && !is_bias) {
        s.local_cols = p->cols / tp;  // input features split; the bias stays whole
        s.col0 = tp_rank_ * s.local_cols;
      }
      offset += s.size();
      shards_.push_back(s);
    }
    unit_count_.push_back(offset - unit_first_.back());
  }
  // Only this rank's blocks are ever generated.
  std::vector<T> host(static_cast<size_t>(offset));
  for (const Shard& s : shards_)
    fill_initial_shard(host.data() + s.offset, s.local_cols, seed, s.tensor_id, s.init, s.fan_in,
                       s.row0, s.local_rows, s.col0, s.local_cols);
  values_ = Buffer<T>(device_, offset);
  grads_ = Buffer<T>(device_, offset);
  values_.upload(host);
  grads_.zero();
}

template <typename T>
std::string Tensor1dTrainer<T>::grid() const {
  return "tp=" + std::to_string(plan_.tp) + ",dp=" + std::to_string(dp_);
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
  T* grads = grads_.data() + unit_first_[unit];
  pending_.push_back(
      data_comm_->all_reduce_async(grads, grads, unit_count_[unit], data_type_of<T>()));
}

template <typename T>
void Tensor1dTrainer<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  model_->set_timer(&timer);
  model_->backward(rows, global_batch, false);
  for (auto& p : pending_) p->wait();
  pending_.clear();
}

template <typename T>
std::map<std::string, double> Tensor1dTrainer<T>::analytic_bytes(int64_t global_batch,
                                                                 bool inference) const {
  // Mixed precision carries float payloads as 16-bit values (the data group in fp32 with
  // --fp32-grad-comm): each group's bytes per element are its wire's.
  const auto element_bytes = [](const Communicator* c) -> size_t {
    return c && c->wire_format() != StorageFormat::full ? 2 : sizeof(T);
  };
  auto bytes = tensor1d_comm_bytes(plan_, batch_slice(global_batch).count,
                                   element_bytes(tp_comm_.get()), dp_, inference);
  if (bytes.count("allreduce:data"))
    bytes["allreduce:data"] = static_cast<double>(mlps::local_parameter_count(plan_)) *
                              static_cast<double>(element_bytes(data_comm_.get()));
  return bytes;
}

template <typename T>
std::vector<NamedTensor> Tensor1dTrainer<T>::gather_parameters() {
  const auto values = values_.download();
  std::vector<HeldRun> runs;
  for (const Shard& s : shards_) {
    // Replica 0 owns the parameters: a split tensor's blocks, tp rank 0's replicated ones.
    const bool owner = dp_rank_ == 0 && (s.split() || tp_rank_ == 0);
    runs.push_back({s.name, s.rows, s.cols, s.row0, s.col0, std::max<int64_t>(s.local_cols, 1),
                    0, s.offset, s.size(), owner});
  }
  auto gathered = gather_held_tensors(runs, std::vector<double>(values.begin(), values.end()),
                                      grid_.world(), /*compare_copies=*/true);
  replica_divergence_ = gathered.copy_spread;
  most_divergent_tensor_ = gathered.most_spread;
  return std::move(gathered.tensors);
}

template class Tensor1dTrainer<float>;
template class Tensor1dTrainer<double>;

}  // namespace mlps
