#pragma once
// The reference scheme: the whole model on one process. Also the fp64 recomputation that
// --verify compares every scheme against.
#include <memory>

#include "src/model/serial_net.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

template <typename T>
class SerialTrainer : public ForwardBackwardTrainer<T> {
 public:
  // fuse_update: each Linear's weights updated during backward (FusedWeightUpdate) where
  // fused_update_applies (fused_update() says whether it is).
  SerialTrainer(const DeviceConfig& device, const ModelConfig& model, const OptimizerConfig& optimizer,
                uint64_t seed, int64_t max_rows, bool fuse_update = false);
  bool fused_update() const { return fused_; }

  std::string scheme() const override { return "serial"; }
  std::string grid() const override { return "1"; }
  BatchSlice batch_slice(int64_t global_rows) const override { return {0, global_rows}; }
  std::vector<NamedTensor> gather_parameters() override;

 private:
  void forward(const HostBatch& rows) override;
  double loss_sum() override { return model_.loss_sum(); }
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override {
    model_.set_timer(&timer);
    if (fused_) optimizer_.open_step();
    model_.backward(rows, global_batch, optimizer_.gradients_zeroed());
  }
  std::vector<int32_t> predictions(int64_t rows) const override {
    return model_.predictions(rows);
  }
  MPI_Comm metrics_comm() const override { return MPI_COMM_SELF; }
  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::optimizer_;
  FusedWeightUpdate<T>* fused_update_for(bool wanted, const ModelConfig& model);
  bool fused_;
  SerialNet<T> model_;
  // Without the fused update: every parameter's value and gradient, flat in tensor order.
  Buffer<T> values_;
  Buffer<Acc<T>> grads_;
};

}  // namespace mlps
