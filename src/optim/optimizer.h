#pragma once
// Adam or SGD over a set of tensors (whole parameters for serial training; shards of them for
// sharded schemes). Each tensor registered once; step() updates every one from its gradient.
//
// Mixed precision: the optimizer keeps an fp32 master copy of every registered tensor, updates
// it, and writes the 16-bit copy the model computes with in the update's own pass. Emulated
// (the Device stores bf16/fp16, T = float): the copy is a float holding the rounded value
// (adam_update_rounded). Typed (T = bf16 or fp16): the copy is the tensor itself, the gradient,
// master and moments fp32 (adam_update_16bit). With fp16 it also runs dynamic loss scaling: the
// Device scales the loss gradient, and step() unscales it, or skips the whole update (on every
// rank of `consensus`) when any rank's gradients hold an inf or NaN.
//
// Fused (enable_fused_update): open_step() before the backward pass, whose Linears update their
// weights a block at a time through apply_block(); step() then updates the tensors that were not.
//
// Offloaded (offload_state_to): the tensors' state (Adam's moments, the fp32 master) lives in a
// scratch file or, for a GPU, in host memory, and step() visits it a chunk at a time
// (offloaded_state.h). On the CPU backend the update is the same kernel either way. On a GPU the
// host keeps the fp32 master of every precision and updates it with the CPU backend's kernel,
// each chunk's gradients coming down and its values going up on the copy stream
// (device_exchange.h), overlapped with the host's update of the chunk before.
//
// Values offloaded too (add_offloaded_values, ZeRO-Infinity's parameters): a tensor has no
// values in device memory; its master is kept with the offloaded state in every precision, and
// each chunk's updated values go to a host buffer handed to the tensor's ValuesOut (which keeps
// them where the scheme fetches them from).
//
// Zeroing (zero_gradients_after_step): each update writes zeros into the gradient it has read,
// in the same pass, so that the next backward can add into the gradients (accumulate) instead of
// zeroing them in a pass of its own.
#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/device/buffer.h"
#include "src/model/fused_weight_update.h"
#include "src/optim/device_exchange.h"
#include "src/optim/loss_scaler.h"
#include "src/optim/offloaded_state.h"
#include "src/optim/optimizer_config.h"

namespace mlps {

template <typename T>
class Optimizer : public FusedWeightUpdate<T> {
 public:
  // consensus: the ranks that must agree to skip a step (all ranks of the run; MPI_COMM_SELF
  // for a model trained by one process alone, such as --verify's serial replay).
  Optimizer(Device& device, const OptimizerConfig& config, MPI_Comm consensus = MPI_COMM_WORLD);

  // Registers `count` elements at value/grad (device memory that outlives the optimizer). With
  // emulated mixed precision, value must hold the initial weights: they become the fp32 master
  // copy and value is rounded to the storage format. With typed storage, value holds them
  // rounded and `initial_master` (host memory, `count` floats) the master's fp32 start.
  void add(T* value, Acc<T>* grad, int64_t count, const Acc<T>* initial_master = nullptr);
  // Returns false when fp16 loss scaling skipped the update (the same on every rank).
  bool step();
  // From now on add() keeps the state of its tensors in a scratch file in `dir` (named by
  // `rank`), or in host memory when `dir` is empty (a GPU's only: the CPU backend's memory is
  // the host's). With `values_too`, tensors are added by add_offloaded_values() only. Before
  // any add().
  void offload_state_to(const std::string& dir, int rank, bool values_too = false);
  // Where a tensor's updated values go: chunk [first, first + count), in host memory.
  using ValuesOut = std::function<void(int64_t first, int64_t count, const T* values)>;
  // Registers `count` elements of gradient at `grad` (device memory) whose values live off the
  // device (offload_state_to(..., true)): `initial_master` (host, `count` fp32 elements) starts
  // the master, and every step hands the updated values to `out`, a chunk at a time.
  void add_offloaded_values(Acc<T>* grad, int64_t count, const Acc<T>* initial_master,
                            ValuesOut out);
  // The offloaded state; null when the state is in memory.
  const OffloadedState<Acc<T>>* offloaded() const { return offloaded_.get(); }
  // What offloaded state moved and waited for so far (zeros when in memory).
  OffloadTraffic offload_traffic() const;

  // From now on step() zeroes every registered gradient. For a scheme whose registered
  // gradients are all the gradients its backward writes (not with the fused update).
  void zero_gradients_after_step();
  // True when the last step() zeroed every registered gradient (none yet, or a step skipped by
  // loss scaling: false), so that the next backward may accumulate into them.
  bool gradients_zeroed() const { return gradients_zeroed_; }

  // Allocates the block, of fused_block_elements() for the model (full precision only:
  // fused_update_applies).
  void enable_fused_update(int64_t block_elements);
  // Starts the step that apply_block() and then step() carry out.
  void open_step() { begin_step(1.0); }
  T* block() override { return block_.data(); }
  int64_t block_rows(int64_t width) const override;
  void apply_block(const T* value, int64_t first, int64_t count) override;
  int64_t steps_taken() const { return steps_; }
  // Bytes the update reads and writes per step (each operand once), for the step-time floor.
  double bytes_per_step() const;

 private:
  struct Slot {
    T* value;
    Acc<T>* grad;
    int64_t count;
    Buffer<Acc<T>> m, v;    // Adam moments (empty for SGD)
    Buffer<Acc<T>> master;  // mixed precision: the fp32 weights value is rounded from
    int64_t fused = 0;  // elements apply_block() updated in the open step
    int offloaded = -1;  // its index in offloaded_, whose arrays replace m, v and master
    ValuesOut values_out;  // values offloaded: value is null, each updated chunk goes here
  };
  // Where a slot's state is, from element `first` on (null where it keeps none).
  struct State {
    Acc<T>* m = nullptr;
    Acc<T>* v = nullptr;
    Acc<T>* master = nullptr;
  };
  State state_at(Slot& s, int64_t first);
  // An offloaded chunk's state, from the arrays OffloadedState::stream() hands over.
  State offloaded_at(Acc<T>* const* arrays) const;
  // The state arrays a slot keeps, in OffloadedState's order: m and v (Adam), then master.
  int state_arrays() const;
  // Offloaded state with a master whatever the precision: from a GPU, or with the values.
  bool offloaded_master() const { return exchanged() || values_offloaded_; }
  // Offloaded from a GPU: the host keeps an fp32 master of every precision (DeviceExchange).
  bool exchanged() const { return exchange_ != nullptr; }
  void add_offloaded(Slot& slot, const Acc<T>* initial_master);
  // Slot `s` updated by the host, chunk by chunk, its gradients and values exchanged with the
  // device (its values handed to values_out when they are offloaded too).
  void step_exchanged(Slot& s);
  // Slot `s` updated chunk by chunk as its offloaded state streams by (the CPU backend).
  void step_streamed(Slot& s);
  bool gradients_finite_everywhere();
  // Counts the step and settles its scalars (bias corrections, gradient scale).
  void begin_step(double grad_scale);
  // Elements [first, first + count) of the slot from grad, with the open step's settings.
  void update(Slot& s, int64_t first, Acc<T>* grad, int64_t count, GradAfterUpdate after);
  // `count` values from their gradients and state, on device `on`. With full precision and a
  // master (offloaded from a GPU), the master is updated and `value` becomes its copy.
  void update(const Device& on, T* value, Acc<T>* grad, int64_t count, GradAfterUpdate after,
              const State& state);
  Device& device_;
  OptimizerConfig config_;
  MPI_Comm consensus_;
  bool mixed_ = false;
  std::optional<LossScaler> scaler_;
  Buffer<uint64_t> nonfinite_total_;  // fp16: the step's count of inf/NaN gradient values
  std::vector<Slot> slots_;
  std::unordered_map<const T*, size_t> slot_of_;  // by value pointer
  int64_t steps_ = 0;
  bool open_ = false;  // begun, step() not yet done
  GradAfterUpdate after_ = GradAfterUpdate::kept;
  bool gradients_zeroed_ = false;
  AdamStep step_;      // the open step's scalars (SGD uses lr and grad_scale)
  Buffer<T> block_;    // the fused update's dW block
  std::unique_ptr<OffloadedState<Acc<T>>> offloaded_;
  // Offloaded from a GPU: the copies, and a CPU Device of the same storage for the host's update.
  std::unique_ptr<DeviceExchange<T>> exchange_;
  std::unique_ptr<Device> host_;
  double host_update_seconds_ = 0;
  bool values_offloaded_ = false;
  std::vector<T> chunk_values_;  // values offloaded, CPU backend: a chunk's updated values
};

}  // namespace mlps
