#include "src/schemes/serial_trainer.h"

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
      model_(device_, model, max_rows, ParameterStorage::owned, fused_update_for(fused_, model)) {
  // Typed storage: the master starts from the fp32 values, as emulated.
  model_.parameters().initialise(seed, [&](Parameter<T>& p, const std::vector<Acc<T>>& wide) {
    optimizer_.add(p.value.data(), p.grad.data(), p.size(),
                   is_16bit_v<T> ? wide.data() : nullptr);
  });
  // Every gradient is the optimizer's: zeroed by its update, added into by the next backward.
  if (!fused_) optimizer_.zero_gradients_after_step();
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
