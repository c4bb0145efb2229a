#pragma once
// bin/tensor3d's scheme: AxoNN 3D tensor parallelism (Tensor3dNet on a G_r × G_c × G_d grid)
// × D data-parallel replicas. Replica p, depth d trains on part p·G_d + d of the global batch's
// D·G_d parts; every rank of its inner × outer plane loads them.
#include "src/schemes/scheme_trainer.h"
#include "src/schemes/tensor3d/tensor3d_net.h"

namespace mlps {

template <typename T>
class Tensor3dTrainer : public ForwardBackwardTrainer<T> {
 public:
  // Throws InputError (before allocating anything) when the grid does not divide the model.
  // Collective over world.
  Tensor3dTrainer(const TrainerSetup& setup, const Shape3d& shape, const Overlap3d& overlap);

  std::string scheme() const override { return "tensor3d"; }
  std::string grid() const override { return grid_.describe(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::vector<NamedTensor> gather_parameters() override;
  std::string comm_backend() const override { return grid_.backend(); }

  // Bytes of this rank's weight shards and vector slices.
  int64_t weight_bytes() const { return net_.weights_size() * int64_t{sizeof(T)}; }
  int64_t vector_bytes() const { return net_.vectors_size() * int64_t{sizeof(T)}; }
  // Bytes of the gathered-W and dW scratch the Linears share (0 at G_d = 1).
  int64_t scratch_bytes() const { return net_.scratch_bytes(); }

 private:
  double forward(const HostBatch& rows) override { return net_.forward(rows); }
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override {
    net_.backward(rows, global_batch, &timer);
  }
  std::vector<int32_t> predictions(int64_t rows) const override { return net_.predictions(rows); }
  MPI_Comm metrics_comm() const override { return grid_.world(); }
  // Every rank of a plane holds the same samples: (r, c) = (0, 0) speaks for them.
  bool speaker() const override { return grid_.r() == 0 && grid_.c() == 0; }

  Grid3d grid_;
  Tensor3dNet<T> net_;
};

}  // namespace mlps
