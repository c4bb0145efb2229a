#pragma once
// ZeRO-3 / FSDP: each rank stores 1/N of every unit's parameters (flattened, padded to a
// multiple of N), gradients and optimizer state. A unit is all-gathered before its forward and
// again before its backward (the next unit's gather prefetched) and freed after use; its
// gradients are reduce-scattered into the shard as soon as its backward is done.
#include <map>

#include "src/schemes/data_parallel_base.h"

namespace mlps {

template <typename T>
class FullyShardedTrainer : public DataParallelBase<T> {
 public:
  FullyShardedTrainer(const TrainerSetup& setup, const DataParallelConfig& config);

  std::vector<NamedTensor> gather_parameters() override;

 private:
  using Params = typename DataParallelBase<T>::Params;
  struct UnitLayout {
    int64_t count = 0;         // padded to a multiple of the ranks
    int64_t shard_offset = 0;  // of this rank's 1/N in the shard buffers
    std::vector<int64_t> offsets;  // each parameter's offset in the unit
  };
  struct Gathered {
    Buffer<T> values;
    PendingComm pending;  // the all-gather filling values, until waited
  };
  struct Reducing {
    Buffer<T> grads;
    PendingComm pending;
  };

  void before_forward(int unit) override;
  void after_forward(int unit) override { release(unit); }
  void before_backward(int unit) override;
  void after_backward(int unit) override;

  void finish_gradient_sync() override { finish_reductions(0); }
  void start_gather(int unit);
  // Waits for the unit's gather (starting it if needed) and points its parameters at it.
  void use_gathered(int unit);
  void release(int unit);
  void finish_reductions(size_t keep);

  std::vector<UnitLayout> units_;
  Buffer<T> shard_values_, shard_grads_;
  std::map<int, Gathered> gathered_;
  std::vector<Reducing> reducing_;
};

}  // namespace mlps
