#pragma once
// Pipeline parallelism, optionally × data parallelism (README, Pipeline parallelism: layout,
// schedules, what /timing/bubble and exposed_comm count, the forward-only stream of evaluate()).
// Micro-batches flow through the stages in PipelineSchedule's order by asynchronous send/recv
// on "pipe"; gradients accumulate over them, are all-reduced over "data" (D > 1), then one
// optimizer step.
//
// With MPI a stage posts a micro-batch's input receive when it sets its slot aside (all M at
// the start under GPipe; under 1F1B the first P − s, then one per backward that frees a slot)
// and its gradient receive right after its forward, so transfers overlap compute. NCCL runs
// point-to-point calls as one group at the next wait and completes a group only as a whole, so
// there each receive is posted just before its wait, with the sends posted since (Megatron's
// send-forward-receive-backward pairs), and a send with no receive wait before the next compute
// is waited at once so that it leaves now. (That NCCL path is compiled but not yet run on GPUs.)
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
