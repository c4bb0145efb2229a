#pragma once
// The reference scheme: the whole model on one process. Also the fp64 recomputation that
// --verify compares every scheme against.
#include <memory>

#include "src/model/serial_net.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

template <typename T>
class SerialTrainer : public SchemeTrainer<T> {
 public:
  SerialTrainer(const DeviceConfig& device, const ModelConfig& model, const OptimizerConfig& optimizer,
                uint64_t seed, int64_t max_rows);

  std::string scheme() const override { return "serial"; }
  std::string grid() const override { return "1"; }
  BatchSlice batch_slice(int64_t global_rows) const override { return {0, global_rows}; }
  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::vector<NamedTensor> gather_parameters() override;

  using SchemeTrainer<T>::device;
  Device& device() { return device_; }
  SerialNet<T>& model() { return model_; }

 private:
  double forward(const HostBatch& rows);
  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::optimizer_;
  SerialNet<T> model_;
};

}  // namespace mlps
