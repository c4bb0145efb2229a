// PipelineTrainer outside its training step: evaluate(), the forward-only stream of
// micro-batches through the stages (docs/pipeline.md: --inference), and the
// parameters --verify gathers.
#include <algorithm>
#include <array>

#include "src/model/predicted_classes.h"
#include "src/schemes/named_tensors.h"
#include "src/schemes/pipeline/pipeline_trainer.h"

namespace mlps {

template <typename T>
Evaluation PipelineTrainer<T>::evaluate(const HostBatch& rows, int64_t /*global_rows*/) {
  start_iteration();
  const auto start = Clock::now();
  const DataType type = data_type_of<T>();
  const int64_t n = micro_rows_;
  const int64_t count = (rows.rows + n - 1) / n;  // micro-batches; the last may be shorter
  auto rows_of = [&](int64_t k) { return std::min(n, rows.rows - k * n); };
  const int64_t classes = chunks_.front().model->config().classes;  // used by the last stage

  // Per chunk, two micro-batches in flight, k in flight[k % 2]; the last virtual stage's
  // results for all rows, so that the losses and predictions are read back once. Each
  // micro-batch runs through this rank's chunks in virtual-stage order.
  struct InFlight {
    Buffer<T> input, output;
    PendingComm recv, send;
  };
  const size_t chunk_count = chunks_.size();
  std::vector<std::array<InFlight, 2>> flight(chunk_count);
  std::vector<ForwardScratch<T>> scratch;
  const int64_t depth = std::min<int64_t>(2, count);
  size_t slot_bytes = 0, working_bytes = 0;
  int last_chunk = -1;
  for (size_t c = 0; c < chunk_count; ++c) {
    const PipelineStage<T>& model = *chunks_[c].model;
    for (int64_t i = 0; i < depth; ++i) {
      flight[c][i].input = Buffer<T>(device_, n * model.input_features());
      flight[c][i].output = Buffer<T>(device_, n * model.output_features());
    }
    if (depth > 0) slot_bytes += flight[c][0].input.bytes() + flight[c][0].output.bytes();
    scratch.push_back(model.make_forward_scratch(n));
    working_bytes += scratch.back().bytes();
    if (chunks_[c].next_rank < 0) last_chunk = static_cast<int>(c);
  }
  std::vector<int> order(chunk_count);
  for (size_t c = 0; c < chunk_count; ++c) order[c] = static_cast<int>(c);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return chunks_[a].virtual_stage < chunks_[b].virtual_stage;
  });
  Buffer<int32_t> labels;
  Buffer<Acc<T>> probs, row_loss;  // fp32 beside typed 16-bit activations
  if (last_chunk >= 0 && rows.rows > 0) {
    labels = Buffer<int32_t>(device_, rows.rows);
    probs = Buffer<Acc<T>>(device_, rows.rows * classes);
    row_loss = Buffer<Acc<T>>(device_, rows.rows);
    device_.to_device(labels.data(), rows.labels.data(), labels.bytes());
  }
  stream_slot_bytes_ = std::max(stream_slot_bytes_, slot_bytes);
  stream_peak_bytes_ = std::max(stream_peak_bytes_, static_cast<size_t>(depth) * slot_bytes);
  stream_working_bytes_ = std::max(stream_working_bytes_, working_bytes + labels.bytes() +
                                                              probs.bytes() + row_loss.bytes());

  auto remote_input = [&](const Chunk& chunk) { return chunk.prev_rank >= 0 && !chunk.prev_local; };
  auto post_recv = [&](size_t c, int64_t k) {
    const Chunk& chunk = chunks_[c];
    InFlight& f = flight[c][k % 2];
    f.recv = pipe_->recv_async(f.input.data(), rows_of(k) * chunk.model->input_features(), type,
                               chunk.prev_rank, tag_forward(chunk.virtual_stage));
  };
  if (post_early_ && count > 0)
    for (size_t c = 0; c < chunk_count; ++c)
      if (remote_input(chunks_[c])) post_recv(c, 0);
  for (int64_t k = 0; k < count; ++k) {
    for (int c : order) {
      pipe_->progress();
      const Chunk& chunk = chunks_[c];
      InFlight& f = flight[c][k % 2];
      const int64_t m = rows_of(k);
      if (chunk.prev_rank < 0) {
        upload_images(f.input.data(), rows, k * n, m);
      } else if (chunk.prev_local) {
        const int prev = shape_.chunk_of(chunk.virtual_stage - 1);
        device_.copy(f.input.data(), flight[prev][k % 2].output.data(),
                     sizeof(T) * static_cast<size_t>(m * chunk.model->input_features()));
      } else {
        if (!f.recv) post_recv(c, k);
        wait_for_neighbour(f.recv);
        // Micro-batch k − 1's forward has read its input buffer (MPI copies a receive's data
        // in at its wait, ordered after the device's work so far).
        if (post_early_ && k + 1 < count) post_recv(c, k + 1);
      }
      if (f.send) f.send->wait();  // micro-batch k − 2 has left this output buffer
      chunk.model->forward_only(f.input.data(), f.output.data(), m, scratch[c]);
      if (chunk.next_rank < 0) {
        device_.template softmax_xent_forward<T>(probs.data() + k * n * classes,
                                                 row_loss.data() + k * n, f.output.data(),
                                                 labels.data() + k * n, m, classes);
      } else if (!chunk.next_local) {
        f.send = pipe_->send_async(f.output.data(), m * chunk.model->output_features(), type,
                                   chunk.next_rank, tag_forward(chunk.virtual_stage + 1));
        // NCCL launches a send at the next wait: with no receive ahead, launch it now.
        if (!post_early_ && (chunk.prev_rank < 0 || k + 1 == count)) f.send->wait();
      }
    }
  }
  for (auto& pair : flight)
    for (InFlight& f : pair)
      if (f.send) f.send->wait();

  double totals[2] = {0, 0};  // Σ loss, correct predictions
  if (last_chunk >= 0 && rows.rows > 0) {
    for (Acc<T> v : row_loss.download()) totals[0] += static_cast<double>(v);
    const auto predicted = predicted_classes(device_, probs.data(), rows.rows, classes);
    for (int64_t r = 0; r < rows.rows; ++r) totals[1] += predicted[r] == rows.labels[r];
  }
  device_.synchronize();
  for (const Span& span : spans_)  // the receive waits
    if (span.kind == bubble_span) bubble_seconds_ += marks_.seconds(span.from, span.to);
  spans_.clear();
  marks_.clear();
  // The flush, as in training: every rank waits here for the last micro-batch's last stage.
  const auto flush_start = Clock::now();
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, grid_.world());
  bubble_seconds_ += std::chrono::duration<double>(Clock::now() - flush_start).count();
  eval_step_history_.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  eval_bubble_history_.push_back(bubble_seconds_);
  return {static_cast<int64_t>(totals[1]), totals[0]};
}

template <typename T>
std::vector<NamedTensor> PipelineTrainer<T>::gather_parameters() {
  // Replica 0's chunks own their units' tensors, whole, in their flat buffers; every rank lists
  // every tensor, in FC_Net's order, for the collective gather.
  std::vector<double> values;
  std::vector<int64_t> base;
  for (const Chunk& chunk : chunks_) {
    base.push_back(static_cast<int64_t>(values.size()));
    const auto mine = Buffer<T>::view(device_, chunk.model->values(),
                                      chunk.model->parameter_elements())
                          .download();
    for (T v : mine) values.push_back(static_cast<double>(widen(v)));
  }
  std::vector<HeldRun> runs;
  const size_t count = chunks_.front().model->parameters().size();
  for (size_t i = 0; i < count; ++i) {
    const Parameter<T>* p = &chunks_.front().model->parameters()[i];
    int64_t offset = 0, held = 0;
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const Parameter<T>* q = &chunks_[c].model->parameters()[i];
      if (q->value.size() == 0) continue;
      held = q->value.size();
      offset = base[c] + (q->value.data() - chunks_[c].model->values());
    }
    runs.push_back({p->name, p->rows, p->cols, 0, 0, p->cols, 0, offset,
                    replica_ == 0 ? held : 0});
  }
  return gather_held_tensors(runs, values, grid_.world()).tensors;
}

template Evaluation PipelineTrainer<float>::evaluate(const HostBatch&, int64_t);
template Evaluation PipelineTrainer<double>::evaluate(const HostBatch&, int64_t);
template std::vector<NamedTensor> PipelineTrainer<float>::gather_parameters();
template std::vector<NamedTensor> PipelineTrainer<double>::gather_parameters();
template Evaluation PipelineTrainer<bf16>::evaluate(const HostBatch&, int64_t);
template Evaluation PipelineTrainer<fp16>::evaluate(const HostBatch&, int64_t);
template std::vector<NamedTensor> PipelineTrainer<bf16>::gather_parameters();
template std::vector<NamedTensor> PipelineTrainer<fp16>::gather_parameters();

}  // namespace mlps
