#pragma once
// The reference scheme: the whole model on one process. Also the fp64 recomputation that
// --verify compares every scheme against.
#include <memory>

#include "src/driver/trainer.h"
#include "src/model/fc_net.h"
#include "src/optim/optimizer.h"

namespace mlps {

template <typename T>
class SerialTrainer : public Trainer {
 public:
  SerialTrainer(DeviceKind device, const ModelConfig& model, const OptimizerConfig& optimizer,
                uint64_t seed, int64_t max_rows);

  std::string scheme() const override { return "serial"; }
  std::string grid() const override { return "1"; }
  BatchSlice batch_slice(int64_t global_rows) const override { return {0, global_rows}; }
  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::vector<NamedTensor> gather_parameters() override;
  int64_t parameter_count() const override { return parameter_count_; }
  double optimizer_bytes_per_step() const override { return optimizer_.bytes_per_step(); }
  const Device& device() const override { return device_; }

  Device& device() { return device_; }
  FcNet<T>& model() { return model_; }

 private:
  double forward(const HostBatch& rows);
  Device device_;
  FcNet<T> model_;
  Optimizer<T> optimizer_;
  int64_t parameter_count_;
  std::vector<T> staged_inputs_;  // host copy of the batch in T
};

}  // namespace mlps
