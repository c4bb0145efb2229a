#pragma once
// Pipeline (inter-layer) parallelism, optionally × data parallelism. Rank r = d·P + s runs stage
// s of pipeline replica d (PipelineLayout). Per step, replica d's rows are split into M
// micro-batches that flow through the stages under the GPipe or 1F1B schedule
// (PipelineSchedule): activations go forward and their gradients backward between neighbouring
// stages by asynchronous send/recv on the communicator "pipe"; parameter gradients accumulate
// over the micro-batches; after the last backward each stage all-reduces its gradients across
// the D replicas (communicator "data") and takes one optimizer step.
//
// Receives are posted early so that transfers overlap compute: with MPI, a stage posts the
// receive of a micro-batch's input when it sets aside that micro-batch's activations (all M at
// the start under GPipe; under 1F1B the first P − s, then one each time a backward frees a
// slot) and the receive of its output gradient right after its forward. NCCL launches
// point-to-point calls as one group at the next wait, and a group completes only as a whole,
// so there each receive is posted just before it is waited, with the sends posted since in the
// same group (Megatron's send-forward-receive-backward pairs); a send with no receive wait
// before the stage's next compute (stage 0's forwards, the last stage's GPipe backwards) is
// waited at once so that it leaves now. That NCCL path is compiled but not yet run on GPUs.
//
// Timing. forward and backward are the phases of each micro-batch's compute on this stage
// (with the sends it posts and, as in bin/data, any wait for a send or for the gradient
// all-reduce: /timing/exposed_comm). The bubble (the extra timing "bubble", seconds per
// iteration) is the time the stage is blocked waiting for a neighbour, outside the phases: in
// the waits for an activation or a gradient, plus the pipeline flush: after its schedule every
// rank waits in the loss reduction until the last stage to finish (stage 0) is done. Receive
// waits count as bubble only, not as exposed communication. A stage's bubble fraction is
// bubble / (step − data): the share of its training step it spent idle.
//
// Activation checkpointing (PipelineStage): a micro-batch in flight keeps only its units' inputs
// and outputs; each stage recomputes a block's internals into one shared set right before the
// block's backward. The p2p traffic is unchanged.
//
// Inference (evaluate): a forward-only stream. The replica's rows flow through the stages in
// micro-batches of the training micro-batch size (the last may be shorter), stage s forwarding
// micro-batch k while s + 1 forwards k − 1. A stage holds two micro-batches in flight (one
// arriving while the other is computed and sent on: input and output buffers each) and one
// forward scratch (PipelineStage::forward_only); nothing is kept for a backward pass. The
// timings keep their meaning per evaluated batch: bubble is the waiting for the previous stage
// plus the flush in the final reduction of the loss and the correct count.
#include <mpi.h>

#include <chrono>
#include <memory>

#include "src/comm/make_communicator.h"
#include "src/grid/process_grid.h"
#include "src/schemes/pipeline_layout.h"
#include "src/schemes/pipeline_report.h"
#include "src/schemes/pipeline_stage.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

template <typename T>
class PipelineTrainer : public SchemeTrainer<T> {
 public:
  // layout comes from resolve_pipeline_layout (already checked). Collective over world.
  PipelineTrainer(const TrainerSetup& setup, const PipelineLayout& layout);

  std::string scheme() const override { return "pipeline"; }
  std::string grid() const override { return layout_.grid(); }
  BatchSlice batch_slice(int64_t global_rows) const override;
  double train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) override;
  Evaluation evaluate(const HostBatch& rows, int64_t global_rows) override;
  std::vector<NamedTensor> gather_parameters() override;
  // Blocked in sends and the gradient all-reduce; receive waits count as bubble instead, so
  // that /timing/exposed_comm and /timing/bubble are disjoint.
  double take_blocked_comm_seconds() override;
  std::vector<std::string> extra_timing_names() const override { return {"bubble"}; }
  std::vector<double> take_extra_timings() override;
  std::string comm_backend() const override { return pipe_->backend(); }

  // This rank's bubble (medians over the iterations after `warmup`) and activation memory: of
  // the training steps, or with `inference` of the evaluate() calls.
  PipelineRankReport report(int64_t warmup, bool inference = false) const;
  int stage() const { return stage_; }
  int replica() const { return replica_; }

 private:
  using Clock = std::chrono::steady_clock;
  // One micro-batch in flight on this stage.
  struct Slot {
    StageActivations<T> activations;
    PendingComm input_recv;   // its input, from the previous stage
    PendingComm output_send;  // its output, to the next stage
    PendingComm grad_recv;    // its output's gradient, from the next stage
  };

  Slot& acquire_slot(int micro_batch, int64_t rows);
  void release_slot(int micro_batch);
  void post_input_recv(Slot& slot, int64_t rows);
  void post_grad_recv(Slot& slot, int64_t rows);
  // Waits for a neighbour's transfer; the time blocked is bubble.
  void wait_for_neighbour(PendingComm& request);
  // True when the action after actions_[index] starts by waiting for a receive.
  bool next_action_receives(size_t index) const;
  // Discards what the log holds from outside a step (an evaluation between training steps) and
  // starts this iteration's bubble and exposed-communication counts.
  void start_iteration();
  // First stage: rows [first, first + count) of the batch's images, as T, to input.
  void upload_images(T* input, const HostBatch& rows, int64_t first, int64_t count);
  void upload_inputs(Slot& slot, const HostBatch& rows, int64_t first, int64_t count);
  double sum_over_ranks(double local) const;

  using SchemeTrainer<T>::device_;
  using SchemeTrainer<T>::log_;
  using SchemeTrainer<T>::optimizer_;
  PipelineLayout layout_;
  ProcessGrid grid_;  // data, pipe
  int stage_ = 0, replica_ = 0;
  std::unique_ptr<Communicator> pipe_;  // this replica's stages
  std::unique_ptr<Communicator> data_;  // this stage across replicas (D > 1)
  bool post_early_ = true;              // MPI; NCCL posts each receive just before its wait
  int64_t micro_rows_ = 0;
  PipelineStage<T> stage_model_;
  std::vector<PipelineAction> actions_;
  std::vector<std::unique_ptr<Slot>> slots_;  // per micro-batch of the step in progress
  size_t activation_bytes_ = 0, activation_peak_bytes_ = 0, slot_bytes_ = 0;
  Buffer<T> input_grads_[2];     // ∂L/∂input being sent to the previous stage (double-buffered)
  PendingComm input_grad_sends_[2];
  Buffer<T> row_loss_;           // last stage: each row's loss over the step
  std::vector<T> staged_;        // host copy of a micro-batch's images in T
  double bubble_seconds_ = 0;    // this iteration's
  double exposed_seconds_ = 0;   // this iteration's blocked time outside receive waits
  std::vector<double> bubble_history_, step_history_;
  // evaluate(): its step and bubble per call, and its buffers (see report()).
  std::vector<double> eval_bubble_history_, eval_step_history_;
  size_t stream_peak_bytes_ = 0, stream_slot_bytes_ = 0, stream_working_bytes_ = 0;
};

}  // namespace mlps
