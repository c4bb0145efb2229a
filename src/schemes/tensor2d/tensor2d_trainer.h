#pragma once
// bin/tensor2d's scheme: dp replicas of FC_Net on a q × q grid (Tensor2dNet). Replica d, grid
// row i trains on part d·q + i of the global batch's dp·q parts (balanced_split.h); every rank
// of the grid row loads it. Each rank keeps only its shards of the parameters, gradients and
// Adam moments: weights about 1/q², vectors (biases, γ, β) about 1/q.

#include "src/schemes/scheme_trainer.h"
#include "src/schemes/tensor2d/tensor2d_net.h"

namespace mlps {

template <typename T>
class Tensor2dTrainer : public ForwardBackwardTrainer<T> {
 public:
  // Throws InputError (before allocating anything) when a part of a split would be empty.
  // Collective over world.
  Tensor2dTrainer(const TrainerSetup& setup, const GridShape& shape);

  std::string scheme() const override { return "tensor2d"; }
  std::string grid() const override { return grid_.describe(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::vector<NamedTensor> gather_parameters() override;
  std::string comm_backend() const override { return grid_.backend(); }

  // Bytes of this rank's parameter shards (weights and vectors) and their gradients and
  // optimizer state.
  int64_t parameter_bytes() const { return net_.layout().total() * int64_t{sizeof(T)}; }
  int64_t weight_bytes() const { return net_.layout().matrix_elements() * int64_t{sizeof(T)}; }
  int64_t state_bytes() const {
    return (optimizer_config_.kind == OptimizerKind::adam ? 4 : 2) * parameter_bytes();
  }

 private:
  // A grid row holds a row group's samples (none when the batch has fewer rows than row
  // groups: its collectives then carry 0 elements on the whole grid row).
  double forward(const HostBatch& rows) override { return net_.forward(rows); }
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override {
    net_.backward(rows, global_batch, &timer);
  }
  std::vector<int32_t> predictions(int64_t rows) const override { return net_.predictions(rows); }
  MPI_Comm metrics_comm() const override { return grid_.world(); }
  // The q ranks of a grid row hold the same samples: column 0 speaks for them.
  bool speaker() const override { return grid_.column() == 0; }

  Grid2d grid_;
  OptimizerConfig optimizer_config_;
  Tensor2dNet<T> net_;
};

}  // namespace mlps
