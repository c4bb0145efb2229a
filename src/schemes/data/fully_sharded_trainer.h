#pragma once
// ZeRO-3 / FSDP: each rank stores 1/G of every unit's parameters (flattened, padded to a
// multiple of G), gradients and optimizer state, G the ranks of its group (all N by default).
// A unit is all-gathered in the group before its forward and again before its backward (the
// next unit's gather prefetched) into one of two kept buffers; its gradients are reduce-scattered into
// the shard as soon as its backward is done. Hybrid sharding (G < N): each reduced shard is
// then all-reduced across the N/G groups, which hold the same shard. With G = 1 a rank holds
// whole units: they are used in place, and their gradients only all-reduced, as DDP's.
// T = bf16 or fp16 is typed 16-bit storage: 16-bit values, gathered as they are, and fp32
// gradients, reduced as the emulation's fp32 buffers are.
// --offload optimizer+params (ZeRO-Infinity): the shard's values live in host memory or the
// rank's second scratch file, a region per unit, written there by the optimizer's update; each
// unit's shard is brought back into a kept device buffer just before its all-gather (the
// prefetch's, one unit ahead with overlap), and only gathered units are on the device. From disk
// the shard after that is read on a thread meanwhile, while the current unit computes.
#include <future>
#include <map>

#include "src/device/buffer_pool.h"
#include "src/optim/offloaded_state.h"
#include "src/schemes/data/data_parallel_base.h"

namespace mlps {

template <typename T>
class FullyShardedTrainer : public DataParallelBase<T> {
 public:
  FullyShardedTrainer(const TrainerSetup& setup, const DataGrid& config);

  std::vector<NamedTensor> gather_parameters() override;
  // Adds /timing/param_fetch with the parameters offloaded: the time spent bringing unit
  // shards back (inside forward and backward).
  std::vector<std::string> extra_timing_names() const override;
  std::vector<double> take_extra_timings() override;

 private:
  using Params = typename DataParallelBase<T>::Params;
  struct UnitLayout {
    int64_t count = 0;         // padded to a multiple of G
    int64_t shard_offset = 0;  // of this rank's 1/G in the shard buffers
    std::vector<int64_t> offsets;  // each parameter's offset in the unit
  };
  struct Gathered {
    Buffer<T> values;
    PendingComm pending;  // the all-gather filling values, until waited
    Buffer<T> fetched;    // parameters offloaded: the shard brought back, the gather's input
  };
  struct Reducing {
    int unit = 0;
    Buffer<Acc<T>> grads;
    PendingComm pending;
  };

  void before_forward(int unit) override;
  void after_forward(int unit) override { release(unit); }
  void before_backward(int unit) override;
  void after_backward(int unit) override;

  void finish_gradient_sync() override;
  // Each unit's gradients land in a fresh zeroed buffer when reduced within a group (G > 1).
  bool gradients_start_zero() const override { return this->comm_ != nullptr; }
  void start_gather(int unit);
  // Parameters offloaded: the unit's shard from where it lives into device memory at `to`.
  void fetch(int unit, T* to);
  // Parameters on disk: starts reading the unit's shard on a thread, unless one is in flight.
  void prefetch(int unit);
  // Waits for the read in flight, if any (its bytes then unused).
  void finish_read();
  // How far ahead of the unit computing the next fetch is: the gather's prefetch with overlap.
  int fetch_ahead() const { return this->comm_ && this->config_.overlap ? 2 : 1; }
  // Waits for the unit's gather (starting it if needed) and points its parameters at it.
  void use_gathered(int unit);
  void release(int unit);
  // Waits for all but the newest `keep` reduce-scatters, then starts their shards' all-reduces.
  void finish_reductions(size_t keep);
  // Starts the all-reduce of the unit's reduced shard across the groups (none: nothing).
  void replicate(int unit);
  template <typename V>
  V* unit_shard(Buffer<V>& shard, int unit) {
    return shard.data() + units_[unit].shard_offset;
  }
  int64_t shard_count(int unit) const { return units_[unit].count / this->shard_ranks(); }

  std::vector<UnitLayout> units_;
  // A unit's gathered values and the gradients it reduce-scatters live in buffers of the
  // largest unit's size: two each with overlap (the unit computing and its neighbour being
  // gathered or reduced), one without; allocated before the first step (G > 1).
  int64_t largest_unit_ = 0;
  BufferPool<T> gathered_pool_{this->device_};
  BufferPool<Acc<T>> reducing_pool_{this->device_};
  Buffer<T> shard_values_;
  Buffer<Acc<T>> shard_grads_;
  std::map<int, Gathered> gathered_;
  std::vector<Reducing> reducing_;
  std::vector<PendingComm> replicating_;  // the shards' all-reduces, waited after backward
  // --offload optimizer+params: the shard's values by unit (shard_values_ stays empty), the
  // device buffers they are fetched into (two with overlap, G > 1), and the time it took.
  std::unique_ptr<OffloadedState<T>> shard_store_;
  BufferPool<T> fetched_pool_{this->device_};
  double fetch_seconds_ = 0, fetch_taken_ = 0;
  ScratchBuffer read_staging_;  // on disk: the largest unit's shard, read into by prefetch()
  int reading_unit_ = -1;
  std::future<void> reading_;  // last: destroyed (waited for) before what it reads and writes
};

}  // namespace mlps
