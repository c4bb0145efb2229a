#pragma once
// bin/tensor3d's scheme: AxoNN 3D tensor parallelism (Tensor3dNet on a G_r × G_c × G_d grid)
// × D data-parallel replicas. Replica p, depth d trains on rows [(p·G_d + d)·B/(D·G_d), ...)
// of the global batch (every rank of its inner × outer plane loads them); the loss is a mean
// over the global batch, so the summed gradients are serial's. evaluate runs the same forward
// pass alone (its collectives are --inference's iteration; between training steps they are
// dropped); each plane's (r, c) = (0, 0) rank counts its samples' loss and predictions.
#include <map>

#include "src/driver/comm_volume_report.h"
#include "src/driver/trainer.h"
#include "src/optim/optimizer.h"
#include "src/schemes/tensor3d/tensor3d_net.h"

namespace mlps {

template <typename T>
class Tensor3dTrainer : public Trainer {
 public:
  // Throws InputError (before allocating anything) when the grid does not divide the model.
  // Collective over world.
  Tensor3dTrainer(DeviceKind device, const ModelConfig& model, const OptimizerConfig& optimizer,
                  uint64_t seed, int64_t global_batch, const Shape3d& shape,
                  const Overlap3d& overlap, CommBackend backend, MPI_Comm world);

  std::string scheme() const override { return "tensor3d"; }
  std::string grid() const override { return grid_.describe(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::vector<NamedTensor> gather_parameters() override;
  int64_t parameter_count() const override { return parameter_count_; }
  double optimizer_bytes_per_step() const override { return optimizer_.bytes_per_step(); }
  const Device& device() const override { return device_; }
  std::map<std::string, CommTotals> take_comm_totals() override;
  double take_blocked_comm_seconds() override { return grid_.log().take_blocked_seconds(); }
  const CommLog* comm_log() const override { return &grid_.log(); }
  std::string comm_backend() const override { return grid_.backend(); }

  // Bytes per collective kind over the training iterations so far (smallest and largest).
  const std::map<std::string, ByteRange>& measured_bytes() const { return measured_; }
  // Bytes of this rank's weight shards and vector slices.
  int64_t weight_bytes() const;
  int64_t vector_bytes() const;
  // Bytes of the gathered-W and dW scratch the Linears share (0 at G_d = 1).
  int64_t scratch_bytes() const { return net_.scratch_bytes(); }

 private:
  double sum_over_world(double local) const;
  // Drops communication no iteration took (an evaluation's between training steps).
  void discard_untaken_comm();

  Device device_;
  Grid3d grid_;
  Tensor3dNet<T> net_;
  Optimizer<T> optimizer_;
  int64_t parameter_count_;
  std::map<std::string, ByteRange> measured_;
};

}  // namespace mlps
