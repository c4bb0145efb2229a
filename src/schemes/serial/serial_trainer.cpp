#include "src/schemes/serial/serial_trainer.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/half_types.h"
#include "src/schemes/named_tensors.h"

namespace mlps {

template <typename T>
SerialTrainer<T>::SerialTrainer(const DeviceConfig& device, const ModelConfig& model,
                                const OptimizerConfig& optimizer, uint64_t seed, int64_t max_rows,
                                bool fuse_update)
    : ForwardBackwardTrainer<T>(device, model, optimizer, MPI_COMM_SELF),
      fused_(fuse_update && fused_update_applies(device_.kind(), device_.storage_format())),
      model_(device_, model, max_rows,
             fused_ ? ParameterStorage::owned : ParameterStorage::external,
             fused_update_for(fused_, model)) {
  ParameterList<T>& params = model_.parameters();
  if (fused_) {  // the fused update applies each Linear's weights tensor by tensor
    // Typed storage: the master starts from the fp32 values, as emulated.
    params.initialise(seed, [&](Parameter<T>& p, const std::vector<Acc<T>>& wide) {
      optimizer_.add(p.value.data(), p.grad.data(), p.size(),
                     is_16bit_v<T> ? wide.data() : nullptr);
    });
    return;
  }
  // Values and gradients flat in tensor order, each tensor a view: the optimizer updates the
  // whole model in one pass (one kernel launch a step, not one per tensor).
  const int64_t elements = params.element_count();
  values_ = Buffer<T>(device_, elements);
  grads_ = Buffer<Acc<T>>(device_, elements);
  int64_t offset = 0;
  for (auto& p : params) {
    p->value = Buffer<T>::view(device_, values_.data() + offset, p->size());
    p->grad = Buffer<Acc<T>>::view(device_, grads_.data() + offset, p->size());
    offset += p->size();
  }
  std::vector<Acc<T>> master;  // typed storage's fp32 master starts from the wide values
  params.initialise(seed, [&](Parameter<T>&, const std::vector<Acc<T>>& wide) {
    if constexpr (is_16bit_v<T>) master.insert(master.end(), wide.begin(), wide.end());
  });
  optimizer_.add(values_.data(), grads_.data(), elements, master.empty() ? nullptr : master.data());
  // Every gradient is the optimizer's: zeroed by its update, added into by the next backward.
  optimizer_.zero_gradients_after_step();
}

template <typename T>
FusedWeightUpdate<T>* SerialTrainer<T>::fused_update_for(bool wanted, const ModelConfig& model) {
  if (!wanted) return nullptr;
  optimizer_.enable_fused_update(fused_block_elements(model, sizeof(T)));
  return &optimizer_;
}

template <typename T>
void SerialTrainer<T>::forward(const HostBatch& rows) {
  if (rows.rows > model_.max_rows())
    throw std::logic_error("batch of " + std::to_string(rows.rows) + " rows exceeds the model's " +
                           std::to_string(model_.max_rows()));
  model_.queue_forward(rows);
}

template <typename T>
std::vector<NamedTensor> SerialTrainer<T>::gather_parameters() {
  std::vector<NamedTensor> tensors;
  append_named_tensors<T>(model_.parameters(), tensors);
  return tensors;
}

template class SerialTrainer<float>;
template class SerialTrainer<double>;
template class SerialTrainer<bf16>;
template class SerialTrainer<fp16>;

}  // namespace mlps
