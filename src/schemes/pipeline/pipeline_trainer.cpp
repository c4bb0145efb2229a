#include "src/schemes/pipeline/pipeline_trainer.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <thread>
#include <utility>

#include "kernels/stored_values.h"
#include "src/base/errors.h"
#include "src/timing/step_statistics.h"

namespace mlps {

using Pass = PipelineAction::Pass;

template <typename T>
PipelineTrainer<T>::PipelineTrainer(const TrainerSetup& s, const PipelineGrid& layout)
    : SchemeTrainer<T>(s), layout_(layout), shape_(layout.shape()),
      grid_(layout.axes(), s.world),
      stage_(grid_.coordinate("pipe")), replica_(grid_.coordinate("data")),
      pipe_(grid_.communicator("pipe", s.backend, device_, "pipe", log_)),
      data_(layout.replicas > 1 ? grid_.communicator("data", s.backend, device_, "data", log_,
                                                   CommRole::weight_gradients)
                                : nullptr),
      flush_log_(std::make_shared<CommLog>()),
      flush_(make_communicator(s.backend, device_, grid_.world(), "flush", flush_log_)),
      flush_value_(device_, 1),
      post_early_(s.backend == CommBackend::mpi),
      micro_rows_(layout.replica_rows(s.global_batch, replica_).count / layout.micro_batches),
      actions_(stage_actions(shape_, stage_)),
      budget_(max_in_flight(shape_, stage_)),
      slots_(static_cast<size_t>(layout.chunks * layout.micro_batches)),
      marks_(device_) {
  flush_value_.zero();
  if (!post_early_ && !transfers_arrive_in_order(shape_))
    throw InputError(std::string("--schedule ") + to_string(layout.schedule) + " with " +
                     std::to_string(layout.micro_batches) + " micro-batches on " +
                     std::to_string(layout.stages) +
                     " stages sends activations and gradients between two ranks in an order "
                     "their receiver does not want them, which NCCL's untagged point-to-point "
                     "cannot carry: use --comm mpi (or at most as many micro-batches as stages)");
  for (const PipelineAction& a : actions_)
    ++pass_count_[a.pass == Pass::forward ? 0 : a.pass == Pass::backward_weight ? 2 : 1];
  const int last_vs = shape_.virtual_stages() - 1;
  chunks_.resize(static_cast<size_t>(layout.chunks));
  for (int c = 0; c < layout.chunks; ++c) {
    Chunk& chunk = chunks_[c];
    const int vs = shape_.virtual_stage(stage_, c);
    chunk.virtual_stage = vs;
    chunk.deferred_pool = BufferPool<T>(device_);
    chunk.model = std::make_unique<PipelineStage<T>>(device_, s.model,
                                                     layout.partition.first_unit(vs),
                                                     layout.partition.end_unit(vs), micro_rows_,
                                                     s.seed);
    chunk.prev_rank = vs > 0 ? shape_.rank_of(vs - 1) : -1;
    chunk.next_rank = vs < last_vs ? shape_.rank_of(vs + 1) : -1;
    chunk.prev_local = chunk.prev_rank == stage_;
    chunk.next_local = chunk.next_rank == stage_;
    const std::vector<Acc<T>> master_start = chunk.model->take_master_start();
    optimizer_.add(chunk.model->values(), chunk.model->grads(),
                   chunk.model->parameter_elements(),
                   master_start.empty() ? nullptr : master_start.data());
    if (vs > 0 && !chunk.prev_local)
      for (auto& b : chunk.input_grads) b = Buffer<T>(device_, micro_rows_ * s.model.hidden);
    const int64_t step_rows = micro_rows_ * layout.micro_batches;
    if (vs == 0)
      staged_images_ = HostBuffer<T>(device_, step_rows * chunk.model->input_features());
    if (vs == last_vs) {
      row_loss_ = Buffer<Acc<T>>(device_, step_rows);
      host_losses_ = HostBuffer<Acc<T>>(device_, step_rows);
      staged_labels_ = HostBuffer<int32_t>(device_, step_rows);
    }
  }
  optimizer_.zero_gradients_after_step();  // it holds every chunk's gradients
}

template <typename T>
BatchSlice PipelineTrainer<T>::batch_slice(int64_t global_rows) const {
  return layout_.replica_rows(global_rows, replica_);
}

template <typename T>
void PipelineTrainer<T>::note_activation_bytes(size_t added, size_t removed) {
  activation_bytes_ += added;
  activation_bytes_ -= removed;
  activation_peak_bytes_ = std::max(activation_peak_bytes_, activation_bytes_);
}

template <typename T>
typename PipelineTrainer<T>::Slot& PipelineTrainer<T>::acquire_slot(int chunk, int micro_batch) {
  auto& slot = slot_ptr(chunk, micro_batch);
  if (slot) return *slot;
  slot = std::make_unique<Slot>(chunks_[chunk].deferred_pool);
  auto& spare = chunks_[chunk].spare_activations;
  if (spare.empty()) {
    slot->activations = chunks_[chunk].model->make_activations(micro_rows_);
  } else {
    slot->activations = std::move(spare.back());
    spare.pop_back();
  }
  const size_t bytes = slot->activations.bytes();
  slot_bytes_ = std::max(slot_bytes_, bytes);
  ++held_;
  note_activation_bytes(bytes, 0);
  return *slot;
}

template <typename T>
void PipelineTrainer<T>::release_slot(int chunk, int micro_batch) {
  auto& slot = slot_ptr(chunk, micro_batch);
  if (slot->output_send) slot->output_send->wait();  // its output buffer is still being sent
  note_activation_bytes(0, slot->activations.bytes());
  --held_;
  chunks_[chunk].spare_activations.push_back(std::move(slot->activations));
  slot.reset();
}

template <typename T>
void PipelineTrainer<T>::post_input_recv(const Chunk& chunk, Slot& slot) {
  slot.input_recv = pipe_->recv_async(slot.activations.input.data(),
                                      micro_rows_ * chunk.model->input_features(),
                                      data_type_of<T>(), chunk.prev_rank,
                                      tag_forward(chunk.virtual_stage));
}

template <typename T>
void PipelineTrainer<T>::post_grad_recv(const Chunk& chunk, Slot& slot) {
  slot.grad_recv = pipe_->recv_async(slot.activations.output_grad.data(),
                                     micro_rows_ * chunk.model->output_features(),
                                     data_type_of<T>(), chunk.next_rank,
                                     tag_backward(chunk.virtual_stage));
}

template <typename T>
void PipelineTrainer<T>::set_aside_ahead() {
  if (!post_early_) return;
  for (; cursor_ < actions_.size(); ++cursor_) {
    const PipelineAction& a = actions_[cursor_];
    if (a.pass != Pass::forward) continue;
    if (slot_ptr(a.chunk, a.micro_batch)) continue;  // already running or run
    if (held_ >= budget_) return;
    const Chunk& chunk = chunks_[a.chunk];
    Slot& slot = acquire_slot(a.chunk, a.micro_batch);
    if (chunk.prev_rank >= 0 && !chunk.prev_local) post_input_recv(chunk, slot);
  }
}

namespace {
// Marks the log's waits as idle for a scope (CommLog::set_idle_waits).
class IdleWaits {
 public:
  explicit IdleWaits(CommLog& log) : log_(log) { log_.set_idle_waits(true); }
  ~IdleWaits() { log_.set_idle_waits(false); }
  IdleWaits(const IdleWaits&) = delete;
  IdleWaits& operator=(const IdleWaits&) = delete;

 private:
  CommLog& log_;
};
}  // namespace

template <typename T>
void PipelineTrainer<T>::wait_for_neighbour(PendingComm& request) {
  // From the end of this stage's own work so far (compute, not bubble) to the device resuming
  // after the transfer: on the GPU the kernel stream waits for it without the host.
  const size_t from = start_span();
  {
    IdleWaits idle(*log_);
    // Idle: give the core to a stage sharing it (ranks oversubscribing cores) while polling.
    while (!request->ready()) std::this_thread::yield();
    request->wait();
  }
  stop_span(from, bubble_span);
  request.reset();
}

template <typename T>
void PipelineTrainer<T>::settle_step() {
  double pass[3] = {0, 0, 0}, bubble = 0;
  for (const Span& span : spans_) {
    const double seconds = marks_.seconds(span.from, span.to);
    if (span.kind == bubble_span) bubble += seconds;
    else pass[span.kind] += seconds;
  }
  step_history_.push_back(marks_.seconds(step_start_, step_end_));
  bubble_history_.push_back(bubble);
  pass_history_.push_back({pass[0], pass[1], pass[2]});
  bubble_seconds_ = bubble;
  flush_log_->take_totals();
  spans_.clear();
  marks_.clear();
  step_unread_ = false;
}

template <typename T>
bool PipelineTrainer<T>::next_action_receives(size_t index) const {
  if (index + 1 >= actions_.size()) return false;
  const PipelineAction& next = actions_[index + 1];
  const Chunk& chunk = chunks_[next.chunk];
  if (next.pass == Pass::forward) return chunk.prev_rank >= 0 && !chunk.prev_local;
  if (next.pass == Pass::backward_weight) return false;
  return chunk.next_rank >= 0 && !chunk.next_local;
}

template <typename T>
void PipelineTrainer<T>::start_iteration() {
  if (step_unread_) settle_step();  // a caller that did not take the last step's timings
  this->discard_untaken_comm();
  bubble_seconds_ = 0;
  spans_.clear();
  marks_.clear();
}

template <typename T>
void PipelineTrainer<T>::upload_images(T* input, const HostBatch& rows, int64_t first,
                                       int64_t count) {
  const float* pixels = rows.pixels.data() + first * rows.features;
  staged_.resize(static_cast<size_t>(count * rows.features));
  std::transform(pixels, pixels + staged_.size(), staged_.begin(),
                 [](float v) { return narrow<T>(v); });
  device_.to_device(input, staged_.data(), sizeof(T) * staged_.size());
  device_.round_to_storage(input, static_cast<int64_t>(staged_.size()));  // as FcNet's input
}

// The last step's queued copies out of the staging are complete: its end synchronised.
template <typename T>
void PipelineTrainer<T>::stage_inputs(const HostBatch& rows) {
  if (staged_images_.size() > 0) {
    if (static_cast<int64_t>(rows.pixels.size()) != staged_images_.size())
      throw std::logic_error("PipelineTrainer: a step's images must fill the first stage's staging");
    std::transform(rows.pixels.begin(), rows.pixels.end(), staged_images_.data(),
                   [](float v) { return narrow<T>(v); });
  }
  if (staged_labels_.size() > 0)
    std::copy_n(rows.labels.begin(), staged_labels_.size(), staged_labels_.data());
}

template <typename T>
void PipelineTrainer<T>::upload_inputs(const Chunk& chunk, Slot& slot, int64_t first,
                                       int64_t count) {
  StageActivations<T>& a = slot.activations;
  if (chunk.model->is_first()) {
    const int64_t features = chunk.model->input_features();
    staged_images_.upload(a.input.data(), first * features, count * features);
    device_.round_to_storage(a.input.data(), count * features);  // as FcNet's input
  }
  if (chunk.model->is_last()) staged_labels_.upload(a.labels.data(), first, count);
}

template <typename T>
void PipelineTrainer<T>::run_forward(const PipelineAction& action, size_t index,
                                     PhaseTimer& timer) {
  const Chunk& chunk = chunks_[action.chunk];
  const int m = action.micro_batch;
  const int64_t n = micro_rows_;
  Slot& slot = acquire_slot(action.chunk, m);
  if (chunk.prev_rank >= 0 && !chunk.prev_local) {
    if (!slot.input_recv) post_input_recv(chunk, slot);
    wait_for_neighbour(slot.input_recv);
  }
  ScopedPhase phase(timer, Phase::forward);
  const size_t from = start_span();
  if (chunk.prev_local) {  // the previous virtual stage's output, on this rank
    const Chunk& prev = chunks_[shape_.chunk_of(chunk.virtual_stage - 1)];
    const Slot& from = *slot_ptr(shape_.chunk_of(chunk.virtual_stage - 1), m);
    device_.copy(slot.activations.input.data(), prev.model->output(from.activations),
                 sizeof(T) * static_cast<size_t>(n * chunk.model->input_features()));
  }
  upload_inputs(chunk, slot, m * n, n);
  const bool last = chunk.next_rank < 0;
  chunk.model->forward(slot.activations, n, last ? row_loss_.data() + m * n : nullptr);
  if (!last && !chunk.next_local) {
    slot.output_send = pipe_->send_async(chunk.model->output(slot.activations),
                                         n * chunk.model->output_features(), data_type_of<T>(),
                                         chunk.next_rank, tag_forward(chunk.virtual_stage + 1));
    if (post_early_) post_grad_recv(chunk, slot);
    else if (!next_action_receives(index)) slot.output_send->wait();  // NCCL: launch it now
  }
  stop_span(from, forward_pass);
}

template <typename T>
void PipelineTrainer<T>::run_backward(const PipelineAction& action, int64_t global_batch,
                                      size_t index, PhaseTimer& timer) {
  Chunk& chunk = chunks_[action.chunk];
  const int m = action.micro_batch;
  const int64_t n = micro_rows_;
  Slot& slot = *slot_ptr(action.chunk, m);
  if (chunk.next_rank >= 0 && !chunk.next_local) {
    if (!slot.grad_recv) post_grad_recv(chunk, slot);
    wait_for_neighbour(slot.grad_recv);
  }
  ScopedPhase phase(timer, Phase::backward);
  const size_t from = start_span();
  // Checkpointing rewrites the stage's output in the backward: its send must be complete (it
  // is in effect: its gradient is back). release_slot waits for it otherwise.
  if (chunk.model->checkpointed()) complete(slot.output_send);
  // ∂L/∂input: nowhere on the first virtual stage, straight into the previous virtual stage's
  // slot when it is on this rank, else into a send buffer.
  T* input_grad = nullptr;
  auto& send = chunk.input_grad_sends[chunk.backwards % 2];
  if (chunk.prev_local) {
    input_grad = slot_ptr(shape_.chunk_of(chunk.virtual_stage - 1), m)
                     ->activations.output_grad.data();
  } else if (chunk.prev_rank >= 0) {
    if (send) send->wait();  // the buffer's previous gradient has left
    input_grad = chunk.input_grads[chunk.backwards % 2].data();
  }
  const bool split = action.pass == Pass::backward_input;
  // Micro-batches after the first add their gradients; so does the first where the last update
  // zeroed them.
  chunk.model->backward(slot.activations, n, global_batch, chunk.backwards > 0 || grads_zeroed_,
                        input_grad, split ? &slot.deferred : nullptr);
  ++chunk.backwards;
  if (split) note_activation_bytes(slot.deferred.bytes(), 0);
  if (chunk.prev_rank >= 0 && !chunk.prev_local) {
    send = pipe_->send_async(input_grad, n * chunk.model->input_features(), data_type_of<T>(),
                             chunk.prev_rank, tag_backward(chunk.virtual_stage - 1));
    if (!post_early_ && !next_action_receives(index)) send->wait();  // NCCL: launch it now
  }
  stop_span(from, backward_pass);
  if (!split) release_slot(action.chunk, m);
}

template <typename T>
void PipelineTrainer<T>::run_weight(const PipelineAction& action, PhaseTimer& timer) {
  Chunk& chunk = chunks_[action.chunk];
  Slot& slot = *slot_ptr(action.chunk, action.micro_batch);
  ScopedPhase phase(timer, Phase::backward);
  const size_t from = start_span();
  const size_t deferred = slot.deferred.bytes();
  slot.deferred.run(chunk.weights > 0 || grads_zeroed_);
  ++chunk.weights;
  note_activation_bytes(0, deferred);
  stop_span(from, weight_pass);
  release_slot(action.chunk, action.micro_batch);
}

template <typename T>
void PipelineTrainer<T>::train_step(const HostBatch& rows, int64_t global_batch,
                                      PhaseTimer& timer) {
  start_iteration();
  grads_zeroed_ = optimizer_.gradients_zeroed();
  for (Chunk& chunk : chunks_) {
    chunk.model->set_timer(&timer);
    chunk.backwards = chunk.weights = 0;
  }
  if (rows.rows != micro_rows_ * layout_.micro_batches)
    throw std::logic_error("PipelineTrainer: a step's rows must be the replica's share");
  global_batch_ = global_batch;
  step_start_ = marks_.mark();
  stage_inputs(rows);
  cursor_ = 0;
  set_aside_ahead();
  for (size_t i = 0; i < actions_.size(); ++i) {
    pipe_->progress();
    // Waiting for the neighbour is bubble, outside the phases; a phase holds the compute and
    // the sends it posts (and, as in bin/data, any wait for their completion).
    const PipelineAction& action = actions_[i];
    if (action.pass == Pass::forward) run_forward(action, i, timer);
    else if (action.pass == Pass::backward_weight) run_weight(action, timer);
    else run_backward(action, global_batch, i, timer);
    set_aside_ahead();
  }
  // The last gradients sent leave when the previous stage takes them: a wait for the
  // neighbour (bubble), as its receive waits are.
  for (Chunk& chunk : chunks_)
    for (auto& send : chunk.input_grad_sends)
      if (send) wait_for_neighbour(send);

  // The flush: a one-value all-reduce over the world (on the GPU in stream order), so that a
  // stage done earlier waits here for the slowest one, as bubble. The loss rows go down queued;
  // step_loss reads them after the step.
  {
    const size_t from = start_span();
    flush_->all_reduce(flush_value_.data(), 1);
    stop_span(from, bubble_span);
  }
  if (row_loss_.size() > 0) host_losses_.download(row_loss_.data(), 0, row_loss_.size());

  if (data_) {
    ScopedPhase phase(timer, Phase::backward);
    for (Chunk& chunk : chunks_)
      data_->all_reduce(chunk.model->grads(), chunk.model->parameter_elements());
  }
  {
    ScopedPhase phase(timer, Phase::optimizer);
    optimizer_.step();
  }
  step_end_ = marks_.mark();
  step_unread_ = true;
}

template <typename T>
double PipelineTrainer<T>::step_loss() {
  device_.synchronize();  // the loss rows' copies are complete
  double local = 0, total = 0;
  for (int64_t r = 0; r < host_losses_.size(); ++r)
    local += static_cast<double>(host_losses_.data()[r]);
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, grid_.world());
  return total / static_cast<double>(global_batch_);
}

template <typename T>
std::vector<double> PipelineTrainer<T>::take_extra_timings() {
  if (step_unread_) settle_step();
  return {std::exchange(bubble_seconds_, 0.0)};
}

template <typename T>
PipelineRankReport PipelineTrainer<T>::report(int64_t warmup, bool inference) const {
  PipelineRankReport r;
  const auto& step_history = inference ? eval_step_history_ : step_history_;
  const auto& bubble_history = inference ? eval_bubble_history_ : bubble_history_;
  const auto first = static_cast<size_t>(std::max<int64_t>(warmup, 0));  // the timed steps
  std::vector<double> steps, bubbles, fractions;
  for (size_t i = first; i < step_history.size(); ++i) {
    steps.push_back(step_history[i]);
    bubbles.push_back(bubble_history[i]);
    fractions.push_back(step_history[i] > 0 ? bubble_history[i] / step_history[i] : 0.0);
  }
  if (!steps.empty()) {
    r.step_seconds = median(steps);
    r.bubble_seconds = median(bubbles);
    r.bubble_fraction = median(fractions);
  }
  r.activation_peak_bytes =
      static_cast<double>(inference ? stream_peak_bytes_ : activation_peak_bytes_);
  r.slot_bytes = static_cast<double>(inference ? stream_slot_bytes_ : slot_bytes_);
  size_t recompute = 0;
  for (const Chunk& chunk : chunks_) recompute += chunk.model->recompute_bytes();
  r.working_bytes = static_cast<double>(inference ? stream_working_bytes_ : recompute);
  // Mean time of one pass of one chunk over the timed steps (the passes per step are fixed).
  double* times[3] = {&r.forward_seconds, &r.input_seconds, &r.weight_seconds};
  for (int kind = 0; kind < 3; ++kind) {
    double sum = 0;
    int64_t timed = 0;
    for (size_t i = first; i < pass_history_.size(); ++i, ++timed) sum += pass_history_[i][kind];
    if (timed > 0 && pass_count_[kind] > 0) *times[kind] = sum / timed / pass_count_[kind];
  }
  return r;
}

template class PipelineTrainer<float>;
template class PipelineTrainer<double>;
template class PipelineTrainer<bf16>;
template class PipelineTrainer<fp16>;

}  // namespace mlps
