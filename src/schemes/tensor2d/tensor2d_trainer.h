#pragma once
// bin/tensor2d's scheme: dp replicas of FC_Net on a q × q grid, the ProcessGrid (data, rows,
// cols), so world rank d·q² + i·q + j is grid row i, column j of replica d; its communicators
// are "row" (ranked by column j), "col" (ranked by row i) and, with dp > 1, "data". FcNet runs
// on this trainer's layer set (SummaLinear, SlicedLayerNorm) over ShardLayout's shards.
// Replica d, grid row i trains on part d·q + i of the global batch's dp·q parts
// (balanced_split.h); every rank of the grid row loads it, and rank (i, j) holds feature part j
// of every activation. The classifier's logit blocks are all-gathered over "row" (padded to c_0
// columns), so a grid row's ranks compute the same loss. Each rank keeps only its shards of the
// parameters, gradients and Adam moments: weights about 1/q², vectors (biases, γ, β) about 1/q.
// Gradients: weight blocks are complete after their reduce-scatters; the vector slices hold this
// rank's rows' sums and are all-reduced over "col" unit by unit as backward finishes each; with
// replicas, each unit's whole range is then all-reduced over "data".
#include <memory>
#include <vector>

#include "src/grid/process_grid.h"
#include "src/model/fc_net.h"
#include "src/schemes/scheme_trainer.h"
#include "src/schemes/tensor2d/tensor2d_grid.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/summa_linear.h"

namespace mlps {

template <typename T>
class Tensor2dTrainer : public ForwardBackwardTrainer<T>, private LayerSet<T>, private UnitHooks {
 public:
  // Throws InputError (before allocating anything) when a part of a split would be empty.
  // Collective over world.
  Tensor2dTrainer(const TrainerSetup& setup, const Tensor2dGrid& shape);

  std::string scheme() const override { return "tensor2d"; }
  std::string grid() const override { return describe(shape_); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  std::vector<NamedTensor> gather_parameters() override;
  std::string comm_backend() const override { return row_comm_->backend(); }

  // Bytes of this rank's parameter shards (weights and vectors) and their gradients and
  // optimizer state.
  int64_t parameter_bytes() const { return layout_.total() * int64_t{sizeof(T)}; }
  int64_t weight_bytes() const { return layout_.matrix_elements() * int64_t{sizeof(T)}; }
  // Values, gradients and the optimizer's state (Adam's moments; typed storage's fp32 master).
  int64_t state_bytes() const {
    const int64_t moments = optimizer_config_.kind == OptimizerKind::adam ? 2 : 0;
    const int64_t master = is_16bit_v<T> ? 1 : 0;
    return layout_.total() *
           (int64_t{sizeof(T)} + (1 + moments + master) * int64_t{sizeof(Acc<T>)});
  }

 private:
  struct UnitSync {
    int unit;
    PendingComm vectors;  // the all-reduce over "col" of the unit's vector slices (q > 1)
  };
  // A grid row holds a row group's samples (none when the batch has fewer rows than row
  // groups: its collectives then carry 0 elements on the whole grid row).
  void forward(const HostBatch& rows) override { net_->queue_forward(rows); }
  double loss_sum() override { return net_->loss_sum(); }
  // Backward of the mean loss; on return every gradient is complete.
  void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) override;
  std::vector<int32_t> predictions(int64_t rows) const override { return net_->predictions(rows); }
  MPI_Comm metrics_comm() const override { return grid_.world(); }
  // The q ranks of a grid row hold the same samples: column 0 speaks for them.
  bool speaker() const override { return column_ == 0; }

  // The layer set: SUMMA Linears and sliced LayerNorms bound to their shards by FC_Net's names.
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  LogitSplit logits();
  // A unit's backward is done: start summing its vectors down the column; with replicas, the
  // unit before it (whose reduce-scatters are now complete) goes to the "data" all-reduce.
  void after_backward(int unit) override;
  void sync_over_replicas(UnitSync& sync);

  Tensor2dGrid shape_;
  ProcessGrid grid_;
  int replica_, row_, column_;
  std::unique_ptr<Communicator> row_comm_, col_comm_, data_comm_;  // data: null when dp == 1
  OptimizerConfig optimizer_config_;
  ModelConfig model_;
  int64_t max_rows_;
  ShardLayout layout_;
  Buffer<T> values_;
  Buffer<Acc<T>> grads_;  // fp32 beside typed 16-bit values
  SummaWorkspace<T> workspace_;
  std::unique_ptr<FcNet<T>> net_;
  std::vector<UnitSync> syncing_;
  std::vector<PendingComm> replica_sums_;
};

}  // namespace mlps
