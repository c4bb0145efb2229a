#include "src/schemes/pipeline_trainer.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "src/model/predicted_classes.h"
#include "src/schemes/named_tensors.h"
#include "src/timing/step_statistics.h"

namespace mlps {
namespace {

using Pass = PipelineAction::Pass;

}  // namespace

template <typename T>
PipelineTrainer<T>::PipelineTrainer(const TrainerSetup& s, const PipelineLayout& layout)
    : SchemeTrainer<T>(s), layout_(layout),
      grid_(layout.axes(), s.world),
      stage_(grid_.coordinate("pipe")), replica_(grid_.coordinate("data")),
      pipe_(grid_.communicator("pipe", s.backend, device_, "pipe", log_)),
      data_(layout.replicas > 1 ? grid_.communicator("data", s.backend, device_, "data", log_,
                                                   CommRole::weight_gradients)
                                : nullptr),
      post_early_(s.backend == CommBackend::mpi),
      micro_rows_(layout.replica_rows(s.global_batch, replica_).count / layout.micro_batches),
      stage_model_(device_, s.model, layout.partition.first_unit(stage_),
                   layout.partition.end_unit(stage_), micro_rows_, s.seed),
      actions_(stage_actions(layout.schedule, stage_, layout.stages, layout.micro_batches)),
      slots_(static_cast<size_t>(layout.micro_batches)) {
  optimizer_.add(stage_model_.values(), stage_model_.grads(), stage_model_.parameter_elements());
  if (!stage_model_.is_first())
    for (auto& b : input_grads_) b = Buffer<T>(device_, micro_rows_ * s.model.hidden);
  if (stage_model_.is_last())
    row_loss_ = Buffer<T>(device_, micro_rows_ * layout.micro_batches);
}

template <typename T>
BatchSlice PipelineTrainer<T>::batch_slice(int64_t global_rows) const {
  return layout_.replica_rows(global_rows, replica_);
}

template <typename T>
typename PipelineTrainer<T>::Slot& PipelineTrainer<T>::acquire_slot(int micro_batch,
                                                                    int64_t rows) {
  auto& slot = slots_[static_cast<size_t>(micro_batch)];
  if (slot) return *slot;
  slot = std::make_unique<Slot>();
  slot->activations = stage_model_.make_activations(rows);
  const size_t bytes = slot->activations.bytes();
  slot_bytes_ = std::max(slot_bytes_, bytes);
  activation_bytes_ += bytes;
  activation_peak_bytes_ = std::max(activation_peak_bytes_, activation_bytes_);
  return *slot;
}

template <typename T>
void PipelineTrainer<T>::release_slot(int micro_batch) {
  auto& slot = slots_[static_cast<size_t>(micro_batch)];
  if (slot->output_send) slot->output_send->wait();  // its output buffer is still being sent
  activation_bytes_ -= slot->activations.bytes();
  slot.reset();
}

template <typename T>
void PipelineTrainer<T>::post_input_recv(Slot& slot, int64_t rows) {
  slot.input_recv = pipe_->recv_async(slot.activations.input.data(),
                                      rows * stage_model_.input_features(), data_type_of<T>(),
                                      stage_ - 1);
}

template <typename T>
void PipelineTrainer<T>::post_grad_recv(Slot& slot, int64_t rows) {
  slot.grad_recv = pipe_->recv_async(slot.activations.output_grad.data(),
                                     rows * stage_model_.output_features(), data_type_of<T>(),
                                     stage_ + 1);
}

template <typename T>
void PipelineTrainer<T>::wait_for_neighbour(PendingComm& request) {
  device_.synchronize();  // this stage's own work so far is compute, not bubble
  exposed_seconds_ += log_->take_blocked_seconds();
  const auto start = Clock::now();
  request->wait();
  device_.synchronize();
  bubble_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  log_->take_blocked_seconds();  // this wait is bubble, not exposed communication
  request.reset();
}

template <typename T>
double PipelineTrainer<T>::take_blocked_comm_seconds() {
  return std::exchange(exposed_seconds_, 0.0) + log_->take_blocked_seconds();
}

template <typename T>
bool PipelineTrainer<T>::next_action_receives(size_t index) const {
  if (index + 1 >= actions_.size()) return false;
  return actions_[index + 1].pass == Pass::forward ? !stage_model_.is_first()
                                                   : !stage_model_.is_last();
}

template <typename T>
void PipelineTrainer<T>::start_iteration() {
  this->discard_untaken_comm();
  exposed_seconds_ = 0;
  bubble_seconds_ = 0;
}

template <typename T>
void PipelineTrainer<T>::upload_images(T* input, const HostBatch& rows, int64_t first,
                                       int64_t count) {
  const float* pixels = rows.pixels.data() + first * rows.features;
  staged_.assign(pixels, pixels + count * rows.features);
  device_.to_device(input, staged_.data(), sizeof(T) * staged_.size());
}

template <typename T>
void PipelineTrainer<T>::upload_inputs(Slot& slot, const HostBatch& rows, int64_t first,
                                       int64_t count) {
  StageActivations<T>& a = slot.activations;
  if (stage_model_.is_first()) upload_images(a.input.data(), rows, first, count);
  if (stage_model_.is_last())
    device_.to_device(a.labels.data(), rows.labels.data() + first,
                      sizeof(int32_t) * static_cast<size_t>(count));
}

template <typename T>
double PipelineTrainer<T>::train_step(const HostBatch& rows, int64_t global_batch,
                                      PhaseTimer& timer) {
  start_iteration();
  stage_model_.set_timer(&timer);
  const auto step_start = Clock::now();
  const int micro_batches = layout_.micro_batches;
  if (rows.rows != micro_rows_ * micro_batches)
    throw std::logic_error("PipelineTrainer: a step's rows must be the replica's share");
  const int64_t n = micro_rows_;
  const DataType type = data_type_of<T>();
  const bool first = stage_model_.is_first(), last = stage_model_.is_last();

  // Set aside the micro-batches this stage may hold at once, their inputs' receives posted.
  int next_slot = 0;
  if (post_early_ && !first) {
    const int budget = max_in_flight(layout_.schedule, stage_, layout_.stages, micro_batches);
    for (; next_slot < budget; ++next_slot) post_input_recv(acquire_slot(next_slot, n), n);
  }
  int backwards_done = 0;
  for (size_t i = 0; i < actions_.size(); ++i) {
    pipe_->progress();
    const int m = actions_[i].micro_batch;
    Slot& slot = acquire_slot(m, n);
    // Waiting for the neighbour is bubble, outside the phases; a phase holds the compute and
    // the sends it posts (and, as in bin/data, any wait for their completion).
    if (actions_[i].pass == Pass::forward) {
      if (!first) {
        if (!slot.input_recv) post_input_recv(slot, n);
        wait_for_neighbour(slot.input_recv);
      }
      ScopedPhase phase(timer, Phase::forward);
      upload_inputs(slot, rows, m * n, n);
      stage_model_.forward(slot.activations, n, last ? row_loss_.data() + m * n : nullptr);
      if (!last) {
        slot.output_send = pipe_->send_async(stage_model_.output(slot.activations),
                                             n * stage_model_.output_features(), type, stage_ + 1);
        if (post_early_) post_grad_recv(slot, n);
        else if (!next_action_receives(i)) slot.output_send->wait();  // NCCL: launch it now
      }
      continue;
    }
    if (!last) {
      if (!slot.grad_recv) post_grad_recv(slot, n);
      wait_for_neighbour(slot.grad_recv);
    }
    ScopedPhase phase(timer, Phase::backward);
    // Checkpointing rewrites the stage's output in the backward: its send must be complete (it
    // is in effect: its gradient is back). release_slot waits for it otherwise.
    if (slot.output_send && stage_model_.checkpointed()) {
      slot.output_send->wait();
      slot.output_send.reset();
    }
    T* input_grad = nullptr;
    auto& send = input_grad_sends_[backwards_done % 2];
    if (!first) {
      if (send) send->wait();  // the buffer's previous gradient has left
      input_grad = input_grads_[backwards_done % 2].data();
    }
    stage_model_.backward(slot.activations, n, global_batch, backwards_done > 0, input_grad);
    ++backwards_done;
    if (!first) {
      send = pipe_->send_async(input_grad, n * stage_model_.input_features(), type, stage_ - 1);
      if (!post_early_ && !next_action_receives(i)) send->wait();  // NCCL: launch it now
    }
    release_slot(m);
    if (post_early_ && !first && next_slot < micro_batches) {
      post_input_recv(acquire_slot(next_slot, n), n);
      ++next_slot;
    }
  }
  {
    ScopedPhase phase(timer, Phase::backward);
    for (auto& send : input_grad_sends_)
      if (send) {
        send->wait();
        send.reset();
      }
  }

  // The flush: the loss is complete once the last stage's last forward is; a stage done
  // earlier waits here for the slowest one (stage 0, whose backward ends the step).
  double loss_sum = 0;
  if (last)
    for (T v : row_loss_.download()) loss_sum += static_cast<double>(v);
  device_.synchronize();
  const auto flush_start = Clock::now();
  MPI_Allreduce(MPI_IN_PLACE, &loss_sum, 1, MPI_DOUBLE, MPI_SUM, grid_.world());
  bubble_seconds_ += std::chrono::duration<double>(Clock::now() - flush_start).count();

  if (data_) {
    ScopedPhase phase(timer, Phase::backward);
    data_->all_reduce(stage_model_.grads(), stage_model_.parameter_elements());
  }
  {
    ScopedPhase phase(timer, Phase::optimizer);
    optimizer_.step();
  }
  device_.synchronize();
  step_history_.push_back(std::chrono::duration<double>(Clock::now() - step_start).count());
  bubble_history_.push_back(bubble_seconds_);
  return loss_sum / static_cast<double>(global_batch);
}

template <typename T>
std::vector<double> PipelineTrainer<T>::take_extra_timings() {
  return {std::exchange(bubble_seconds_, 0.0)};
}

template <typename T>
Evaluation PipelineTrainer<T>::evaluate(const HostBatch& rows, int64_t /*global_rows*/) {
  start_iteration();
  const auto start = Clock::now();
  const bool first = stage_model_.is_first(), last = stage_model_.is_last();
  const DataType type = data_type_of<T>();
  const int64_t n = micro_rows_, in_features = stage_model_.input_features();
  const int64_t out_features = stage_model_.output_features();
  const int64_t classes = out_features;  // used on the last stage only
  const int64_t count = (rows.rows + n - 1) / n;  // micro-batches; the last may be shorter
  auto rows_of = [&](int64_t k) { return std::min(n, rows.rows - k * n); };

  // Two micro-batches in flight, k in flight[k % 2]; the last stage's results for all rows, so
  // that the losses and predictions are read back once.
  struct InFlight {
    Buffer<T> input, output;
    PendingComm recv, send;
  };
  std::array<InFlight, 2> flight;
  const int64_t depth = std::min<int64_t>(2, count);
  for (int64_t i = 0; i < depth; ++i) {
    flight[i].input = Buffer<T>(device_, n * in_features);
    flight[i].output = Buffer<T>(device_, n * out_features);
  }
  ForwardScratch<T> scratch = stage_model_.make_forward_scratch(n);
  Buffer<int32_t> labels;
  Buffer<T> probs, row_loss;
  if (last && rows.rows > 0) {
    labels = Buffer<int32_t>(device_, rows.rows);
    probs = Buffer<T>(device_, rows.rows * classes);
    row_loss = Buffer<T>(device_, rows.rows);
    device_.to_device(labels.data(), rows.labels.data(), labels.bytes());
  }
  const size_t slot_bytes = flight[0].input.bytes() + flight[0].output.bytes();
  stream_slot_bytes_ = std::max(stream_slot_bytes_, slot_bytes);
  stream_peak_bytes_ = std::max(stream_peak_bytes_, static_cast<size_t>(depth) * slot_bytes);
  stream_working_bytes_ = std::max(stream_working_bytes_, scratch.bytes() + labels.bytes() +
                                                              probs.bytes() + row_loss.bytes());

  auto post_recv = [&](int64_t k) {
    InFlight& f = flight[k % 2];
    f.recv = pipe_->recv_async(f.input.data(), rows_of(k) * in_features, type, stage_ - 1);
  };
  if (post_early_ && !first && count > 0) post_recv(0);
  for (int64_t k = 0; k < count; ++k) {
    pipe_->progress();
    InFlight& f = flight[k % 2];
    const int64_t m = rows_of(k);
    if (first) {
      upload_images(f.input.data(), rows, k * n, m);
    } else {
      if (!f.recv) post_recv(k);
      wait_for_neighbour(f.recv);  // synchronises: micro-batch k − 1's forward is done, so
      if (post_early_ && k + 1 < count) post_recv(k + 1);  // its input buffer is free
    }
    if (f.send) f.send->wait();  // micro-batch k − 2 has left this output buffer
    stage_model_.forward_only(f.input.data(), f.output.data(), m, scratch);
    if (last) {
      device_.template softmax_xent_forward<T>(probs.data() + k * n * classes, row_loss.data() + k * n,
                                      f.output.data(), labels.data() + k * n, m, classes);
    } else {
      f.send = pipe_->send_async(f.output.data(), m * out_features, type, stage_ + 1);
      // NCCL launches a send at the next wait: with no receive ahead, launch it now.
      if (!post_early_ && (first || k + 1 == count)) f.send->wait();
    }
  }
  for (InFlight& f : flight)
    if (f.send) f.send->wait();

  double totals[2] = {0, 0};  // Σ loss, correct predictions
  if (last && rows.rows > 0) {
    for (T v : row_loss.download()) totals[0] += static_cast<double>(v);
    const auto predicted = predicted_classes(device_, probs.data(), rows.rows, classes);
    for (int64_t r = 0; r < rows.rows; ++r) totals[1] += predicted[r] == rows.labels[r];
  }
  // The flush, as in training: every rank waits here for the last micro-batch's last stage.
  device_.synchronize();
  const auto flush_start = Clock::now();
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, grid_.world());
  bubble_seconds_ += std::chrono::duration<double>(Clock::now() - flush_start).count();
  eval_step_history_.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  eval_bubble_history_.push_back(bubble_seconds_);
  return {static_cast<int64_t>(totals[1]), totals[0]};
}

template <typename T>
std::vector<NamedTensor> PipelineTrainer<T>::gather_parameters() {
  // Replica 0's stages own their units' tensors, whole, in their flat buffers.
  std::vector<HeldRun> runs;
  int64_t offset = 0;
  for (const auto& p : stage_model_.parameters()) {
    const int64_t held = p->value.size();
    runs.push_back({p->name, p->rows, p->cols, 0, 0, p->cols, 0, offset,
                    replica_ == 0 ? held : 0});
    offset += held;
  }
  const auto values =
      Buffer<T>::view(device_, stage_model_.values(), stage_model_.parameter_elements()).download();
  return gather_held_tensors(runs, std::vector<double>(values.begin(), values.end()),
                             grid_.world())
      .tensors;
}

template <typename T>
PipelineRankReport PipelineTrainer<T>::report(int64_t warmup, bool inference) const {
  PipelineRankReport r;
  const auto& step_history = inference ? eval_step_history_ : step_history_;
  const auto& bubble_history = inference ? eval_bubble_history_ : bubble_history_;
  std::vector<double> steps, bubbles, fractions;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(warmup, 0)); i < step_history.size();
       ++i) {
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
  r.working_bytes =
      static_cast<double>(inference ? stream_working_bytes_ : stage_model_.recompute_bytes());
  return r;
}

template class PipelineTrainer<float>;
template class PipelineTrainer<double>;

}  // namespace mlps
