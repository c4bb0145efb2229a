#pragma once
// Pipeline parallelism, optionally × data parallelism (docs/pipeline.md: layout,
// schedules, what /timing/bubble and exposed_comm count, the forward-only stream of evaluate()).
// Each rank runs its chunks (one, or several virtual stages) through the actions of
// pipeline_schedule.h; micro-batches flow between virtual stages by asynchronous send/recv on
// "pipe", tagged by virtual stage and direction (a copy when both are on this rank); gradients
// accumulate over them, are all-reduced over "data" (D > 1), then one optimizer step.
//
// With MPI a rank sets micro-batch slots aside in action order, as many as the schedule holds
// at its peak (all M at the start under GPipe; under 1F1B the first P − s, then one per
// backward that frees a slot), posting each one's input receive then, and its gradient receive
// right after its forward, so transfers overlap compute. NCCL runs
// point-to-point calls as one group at the next wait and completes a group only as a whole, so
// there each receive is posted just before its wait, with the sends posted since (Megatron's
// send-forward-receive-backward pairs), and a send with no receive wait before the next compute
// is waited at once so that it leaves now. NCCL matches calls in order, without tags: it
// carries a schedule only where transfers_arrive_in_order (all but ZB-V with M > P). That path
// has run on the emulated GPU, not yet across real GPUs.
// A step asks nothing of the device but its work: its passes and bubble are timed with
// DeviceMarks (CUDA events on the GPU, read after the step), inputs go up through pinned
// staging, the loss rows come down queued, and the flush is a one-value all-reduce in stream
// order.
// T = bf16 or fp16 is typed 16-bit storage: activations and their gradients travel between
// stages as their 16-bit values, parameters' gradients stay fp32 (all-reduced on the gradients'
// wire), and each chunk's optimizer keeps an fp32 master.
#include <mpi.h>

#include <array>
#include <chrono>
#include <memory>

#include "src/comm/make_communicator.h"
#include "src/model/deferred_weight_grads.h"
#include "src/grid/process_grid.h"
#include "src/schemes/pipeline/pipeline_grid.h"
#include "src/schemes/pipeline/pipeline_report.h"
#include "src/schemes/pipeline/pipeline_stage.h"
#include "src/schemes/scheme_trainer.h"
#include "src/timing/device_marks.h"

namespace mlps {

template <typename T>
class PipelineTrainer : public SchemeTrainer<T> {
 public:
  // layout comes from resolve_pipeline_grid (already checked). Collective over world.
  // InputError (on every rank) for a schedule NCCL cannot carry (transfers_arrive_in_order).
  PipelineTrainer(const TrainerSetup& setup, const PipelineGrid& layout);

  std::string scheme() const override { return "pipeline"; }
  std::string grid() const override { return layout_.grid(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  // A step queues its work and asks the device for nothing: its passes and bubble are timed
  // on the device's clock (DeviceMarks) and read after the step's end (take_extra_timings).
  void train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  // The last step's mean loss (the last virtual stages' rows, summed over the world): waits for
  // the device. Collective over world.
  double step_loss() override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::vector<NamedTensor> gather_parameters() override;
  // Exposed communication (take_blocked_comm_seconds) is the time blocked in sends and the
  // gradient all-reduce; receive waits, the wait for the last sends to be taken and the flush
  // are idle waits (CommLog::set_idle_waits) and count as bubble instead, so that
  // /timing/exposed_comm and /timing/bubble are disjoint.
  std::vector<std::string> extra_timing_names() const override { return {"bubble"}; }
  // This step's bubble; reads its marks (the step is over: the device has passed them).
  std::vector<double> take_extra_timings() override;
  std::string comm_backend() const override { return pipe_->backend(); }

  // This rank's bubble (medians over the iterations after `warmup`) and activation memory: of
  // the training steps (those whose timings were taken), or with `inference` of the evaluate()
  // calls.
  PipelineRankReport report(int64_t warmup, bool inference = false) const;

 private:
  using Clock = std::chrono::steady_clock;
  // One of this rank's chunks of the model: virtual stage `virtual_stage`.
  struct Chunk {
    int virtual_stage = 0;
    std::unique_ptr<PipelineStage<T>> model;
    int prev_rank = -1, next_rank = -1;  // the neighbour virtual stages' ranks on pipe
    bool prev_local = false, next_local = false;  // ... when they are this rank
    Buffer<T> input_grads[2];  // ∂L/∂input being sent to the previous stage (double-buffered)
    PendingComm input_grad_sends[2];
    int backwards = 0, weights = 0;  // of this step: B's (or whole backwards) and W's done
    // What a released slot leaves for the next one (its activations, W's copies): a
    // steady-state step allocates none, and each chunk keeps as many as it held at once.
    std::vector<StageActivations<T>> spare_activations;
    BufferPool<T> deferred_pool;
  };
  // One micro-batch in flight on one chunk.
  struct Slot {
    explicit Slot(BufferPool<T>& deferred_pool) : deferred(deferred_pool) {}
    StageActivations<T> activations;
    DeferredWeightGrads<T> deferred;  // after its B, before its W
    PendingComm input_recv;   // its input, from the previous stage
    PendingComm output_send;  // its output, to the next stage
    PendingComm grad_recv;    // its output's gradient, from the next stage
  };

  std::unique_ptr<Slot>& slot_ptr(int chunk, int micro_batch) {
    return slots_[static_cast<size_t>(chunk) * layout_.micro_batches + micro_batch];
  }
  Slot& acquire_slot(int chunk, int micro_batch);
  void release_slot(int chunk, int micro_batch);
  // Sets slots aside, in action order from the cursor, while fewer than the schedule's peak
  // are held, posting their input receives (MPI).
  void set_aside_ahead();
  void post_input_recv(const Chunk& chunk, Slot& slot);
  void post_grad_recv(const Chunk& chunk, Slot& slot);
  // One action of the schedule, inside its phase after any wait for a neighbour.
  void run_forward(const PipelineAction& action, size_t index, PhaseTimer& timer);
  void run_backward(const PipelineAction& action, int64_t global_batch, size_t index,
                    PhaseTimer& timer);
  void run_weight(const PipelineAction& action, PhaseTimer& timer);
  // Waits for a neighbour's transfer (an idle wait); the device's time idle is bubble.
  void wait_for_neighbour(PendingComm& request);
  // Times what runs from here to stop_span (a pass kind, or bubble) on the device's clock.
  enum SpanKind { forward_pass, backward_pass, weight_pass, bubble_span };
  size_t start_span() { return marks_.mark(); }
  void stop_span(size_t from, SpanKind kind) { spans_.push_back({from, marks_.mark(), kind}); }
  // Reads the last step's marks into the histories (once the device has passed them).
  void settle_step();
  // True when the action after actions_[index] starts by waiting for a receive.
  bool next_action_receives(size_t index) const;
  // Discards what the log holds from outside a step (an evaluation between training steps) and
  // starts this iteration's bubble and exposed-communication counts.
  void start_iteration();
  // First stage (evaluate()): rows [first, first + count) of the batch's images, as T, to
  // input, waiting for the copy.
  void upload_images(T* input, const HostBatch& rows, int64_t first, int64_t count);
  // A step's images (first stage) and labels (last stage) into pinned staging, for queued
  // copies to each micro-batch's slot (upload_inputs).
  void stage_inputs(const HostBatch& rows);
  void upload_inputs(const Chunk& chunk, Slot& slot, int64_t first, int64_t count);
  void note_activation_bytes(size_t added, size_t removed);
  int tag_forward(int virtual_stage) const { return 2 * virtual_stage; }  // its input
  int tag_backward(int virtual_stage) const { return 2 * virtual_stage + 1; }  // its output's grad

  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::log_;
  using SchemeTrainer<T>::optimizer_;
  PipelineGrid layout_;
  PipelineShape shape_;
  ProcessGrid grid_;  // data, pipe
  int stage_ = 0, replica_ = 0;
  std::unique_ptr<Communicator> pipe_;  // this replica's stages
  std::unique_ptr<Communicator> data_;  // this stage across replicas (D > 1)
  // The flush over the world, with a log of its own (read only to let its records go): the
  // step's end, not the scheme's traffic.
  std::shared_ptr<CommLog> flush_log_;
  std::unique_ptr<Communicator> flush_;
  Buffer<Acc<T>> flush_value_;
  bool post_early_ = true;              // MPI; NCCL posts each receive just before its wait
  int64_t micro_rows_ = 0;
  bool grads_zeroed_ = false;  // this step's: the last update zeroed every gradient
  std::vector<Chunk> chunks_;
  std::vector<PipelineAction> actions_;
  int budget_ = 0;           // the most slots the schedule holds at once (max_in_flight)
  size_t cursor_ = 0;        // set_aside_ahead's next action
  int held_ = 0;             // slots set aside
  std::vector<std::unique_ptr<Slot>> slots_;  // per (chunk, micro-batch) of the step
  size_t activation_bytes_ = 0, activation_peak_bytes_ = 0, slot_bytes_ = 0;
  Buffer<Acc<T>> row_loss_;      // last virtual stage: each row's loss over the step
  HostBuffer<Acc<T>> host_losses_;  // ... queued down at the step's end, read by step_loss
  HostBuffer<T> staged_images_;     // first virtual stage: the step's images in T
  HostBuffer<int32_t> staged_labels_;  // last virtual stage: the step's labels
  std::vector<T> staged_;        // evaluate(): host copy of a micro-batch's images in T
  int64_t global_batch_ = 0;     // the last step's
  double bubble_seconds_ = 0;    // this iteration's
  // The step's marks: its start and end, and the spans of its passes and bubble.
  struct Span {
    size_t from, to;
    SpanKind kind;
  };
  DeviceMarks marks_;
  std::vector<Span> spans_;
  size_t step_start_ = 0, step_end_ = 0;
  bool step_unread_ = false;  // a step whose marks settle_step has not read
  std::vector<double> bubble_history_, step_history_;
  // Per pass kind (forward, B or whole backward, W): each step's seconds, and how many a step
  // runs.
  std::vector<std::array<double, 3>> pass_history_;
  int64_t pass_count_[3] = {0, 0, 0};
  // evaluate(): its step and bubble per call, and its buffers (see report()).
  std::vector<double> eval_bubble_history_, eval_step_history_;
  size_t stream_peak_bytes_ = 0, stream_slot_bytes_ = 0, stream_working_bytes_ = 0;
};

}  // namespace mlps
