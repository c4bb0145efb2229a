#include "src/model/fc_net.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "kernels/stored_values.h"

#include "src/model/predicted_classes.h"
#include "src/model/sliced_ops.h"
#include "src/timing/nvtx_range.h"

namespace mlps {

template <typename T>
size_t NetActivations<T>::bytes() const {
  size_t total = input.bytes() + labels.bytes() + probs.bytes() + output_grad.bytes();
  for (const auto& b : outputs) total += b.bytes();
  for (const auto& s : saved) total += s.bytes();
  return total;
}

template <typename T>
FcNet<T>::FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
                LogitSplit logits, int64_t input_first)
    : FcNet(device, config, max_rows, layers, std::move(logits), input_first,
            StageUnits{0, static_cast<int>(config.layers) + 2}, false) {
  own_ = make_activations(max_rows);
  row_loss_ = Buffer<Acc<T>>(device, max_rows);
  staged_inputs_ = HostBuffer<T>(device, max_rows * embed_->in_width());
  staged_labels_ = HostBuffer<int32_t>(device, max_rows);
  host_losses_ = HostBuffer<Acc<T>>(device, max_rows);
}

template <typename T>
FcNet<T>::FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
                StageUnits units)
    : FcNet(device, config, max_rows, layers, LogitSplit{}, 0, units, true) {}

template <typename T>
FcNet<T>::FcNet(Device& device, const ModelConfig& config, int64_t max_rows, LayerSet<T>& layers,
                LogitSplit logits, int64_t input_first, StageUnits range, bool stage)
    : device_(device), config_(config), max_rows_(max_rows), input_first_(input_first),
      split_(std::move(logits)), first_(range.first) {
  auto runs = [&](int unit) { return unit >= range.first && unit < range.end; };
  // Units outside the range exist only for their parameters' identities: no memory.
  embed_ = layers.linear("embed", config.input_features(), config.hidden);
  layers.unit_made(0);
  if (runs(0)) units_.push_back({embed_.get(), nullptr, embed_->in_width(), embed_->out_width()});
  for (int64_t l = 0; l < config.layers; ++l) {
    blocks_.push_back(
        std::make_unique<MlpBlock<T>>(device, layers, "block" + std::to_string(l), config));
    const int unit = static_cast<int>(l) + 1;
    layers.unit_made(unit);
    MlpBlock<T>* b = blocks_.back().get();
    if (runs(unit)) units_.push_back({nullptr, b, b->in_width(), b->out_width()});
  }
  classifier_ = layers.linear("classifier", config.hidden, config.classes);
  const int last = static_cast<int>(config.layers) + 1;
  layers.unit_made(last);
  if (runs(last)) units_.push_back({classifier_.get(), nullptr, config.hidden, config.classes});

  std::vector<MlpBlock<T>*> blocks;
  int64_t widest = embed_->out_width();
  for (const Unit& u : units_)
    if (u.block) {
      blocks.push_back(u.block);
      widest = std::max({widest, u.in_width, u.out_width});
    }
  scratch_ = make_block_scratch(device, blocks, max_rows);
  grad_a_ = Buffer<T>(device, max_rows * widest);
  grad_b_ = Buffer<T>(device, max_rows * widest);
  if (is_last()) grad_logits_ = Buffer<T>(device, max_rows * config.classes);
  if (config.checkpoint_activations && !blocks.empty()) {
    recompute_ = blocks.front()->make_activations(max_rows);
    // A stage keeps passes per micro-batch: its classifier's input is recomputed instead.
    if (stage && is_last() && units_.size() >= 2 && units_[units_.size() - 2].block)
      recompute_output_ = Buffer<T>(device, max_rows * config.hidden);
  }
  if (split_.group) {
    // Sent padded to the widest block (an all-gather needs equal counts); the padding is never
    // read, zeroed only so that no uninitialised memory travels.
    local_logits_ = Buffer<T>(device, max_rows * split_.block);
    local_logits_.zero();
    gathered_logits_ = Buffer<T>(device, split_.group->size() * max_rows * split_.block);
    local_grad_logits_ = Buffer<T>(device, max_rows * classifier_->out_width());
    local_grad_logits_.zero();  // padding columns: zero gradient
  }
}

template <typename T>
int64_t FcNet<T>::input_features() const {
  return units_.front().in_width;
}

template <typename T>
int64_t FcNet<T>::output_features() const {
  return units_.back().out_width;
}

template <typename T>
NetActivations<T> FcNet<T>::make_activations(int64_t rows) const {
  NetActivations<T> a;
  a.input = Buffer<T>(device_, rows * input_features());
  for (size_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    a.outputs.push_back(shares_output(i) ? Buffer<T>() : Buffer<T>(device_, rows * u.out_width));
    const bool keep = u.block && !config_.checkpoint_activations;
    a.saved.push_back(keep ? u.block->make_activations(rows) : BlockActivations<T>{});
  }
  if (is_last()) {
    a.labels = Buffer<int32_t>(device_, rows);
    a.probs = Buffer<Acc<T>>(device_, rows * config_.classes);
  } else {
    a.output_grad = Buffer<T>(device_, rows * output_features());
  }
  return a;
}

template <typename T>
template <typename Pass>
void FcNet<T>::run_unit(size_t unit, bool backward, Pass pass) {
  const int id = first_ + static_cast<int>(unit);
  const nvtx::Scope range(backward ? "backward unit" : "forward unit", id);
  if (hooks_) backward ? hooks_->before_backward(id) : hooks_->before_forward(id);
  pass();
  if (hooks_) backward ? hooks_->after_backward(id) : hooks_->after_forward(id);
}

template <typename T>
void FcNet<T>::forward_unit(NetActivations<T>& a, size_t i, const T* x, int64_t rows) {
  const Unit& u = units_[i];
  if (u.block) {
    u.block->forward(x, output_of(a, i), rows, saved(a, i));
  } else if (u.linear == classifier_.get() && split_.group) {
    classifier_->forward(x, local_logits_.data(), rows, false);
    // Every rank of the group assembles the full logits: block p at p·rows·block.
    const int parts = split_.group->size();
    split_.group->all_gather<T>(local_logits_.data(), gathered_logits_.data(),
                                rows * split_.block);
    for (int p = 0; p < parts; ++p)
      sliced::copy_2d<T>(device_, a.outputs[i].data() + split_.first[p], config_.classes,
                         gathered_logits_.data() + p * rows * split_.block, split_.width[p],
                         rows, split_.count[p]);
  } else {
    u.linear->forward(x, output_of(a, i), rows, false);
  }
}

template <typename T>
void FcNet<T>::forward(NetActivations<T>& a, int64_t rows, Acc<T>* row_loss) {
  const T* x = a.input.data();
  for (size_t i = 0; i < units_.size(); ++i) {
    run_unit(i, false, [&] { forward_unit(a, i, x, rows); });
    x = output_of(a, i);
  }
  if (is_last())
    device_.softmax_xent_forward<T>(a.probs.data(), row_loss, output(a), a.labels.data(), rows,
                                    config_.classes);
}

template <typename T>
void FcNet<T>::queue_forward(const HostBatch& batch, int64_t padded_rows) {
  const int64_t width = embed_->in_width();
  const int64_t rows = std::max(batch.rows, padded_rows);
  if (rows > max_rows_)
    throw std::logic_error("FcNet: a pass of " + std::to_string(rows) + " rows exceeds " +
                           std::to_string(max_rows_));
  // 16-bit storage holds the pixels rounded, as the emulation rounds them on the device.
  T* inputs = staged_inputs_.data();
  for (int64_t r = 0; r < batch.rows; ++r)
    std::transform(batch.pixels.begin() + r * batch.features + input_first_,
                   batch.pixels.begin() + r * batch.features + input_first_ + width,
                   inputs + r * width, [](auto v) { return narrow<T>(v); });
  std::fill(inputs + batch.rows * width, inputs + rows * width, T{});
  int32_t* labels = staged_labels_.data();
  std::copy(batch.labels.begin(), batch.labels.begin() + batch.rows, labels);
  std::fill(labels + batch.rows, labels + rows, 0);
  queue_staged(rows, batch.rows);
}

template <typename T>
void FcNet<T>::queue_staged(int64_t rows, int64_t counted) {
  const int64_t width = embed_->in_width();
  staged_inputs_.upload(own_.input.data(), 0, rows * width);
  // Mixed precision multiplies the pixels in 16 bits too, as autocast casts a Linear's input.
  device_.round_to_storage(own_.input.data(), rows * width);
  staged_labels_.upload(own_.labels.data(), 0, rows);
  forward(own_, rows, row_loss_.data());
  counted_rows_ = counted;
  host_losses_.download(row_loss_.data(), 0, counted);
}

template <typename T>
double FcNet<T>::loss_sum() {
  device_.synchronize();
  double sum = 0.0;
  for (int64_t r = 0; r < counted_rows_; ++r) sum += static_cast<double>(host_losses_.data()[r]);
  return sum;
}

template <typename T>
double FcNet<T>::forward(const HostBatch& batch, int64_t padded_rows) {
  queue_forward(batch, padded_rows);
  return loss_sum();
}

template <typename T>
double FcNet<T>::forward(const T* host_inputs, const int32_t* host_labels, int64_t rows,
                         int64_t counted) {
  if (rows > max_rows_)
    throw std::logic_error("FcNet: a pass of " + std::to_string(rows) + " rows exceeds " +
                           std::to_string(max_rows_));
  std::copy(host_inputs, host_inputs + rows * embed_->in_width(), staged_inputs_.data());
  std::copy(host_labels, host_labels + rows, staged_labels_.data());
  queue_staged(rows, counted < 0 ? rows : counted);
  return loss_sum();
}

template <typename T>
const T* FcNet<T>::local_grad_logits(int64_t rows) {
  if (!split_.group) return grad_logits_.data();
  const int p = split_.group->rank();
  sliced::copy_2d<T>(device_, local_grad_logits_.data(), split_.width[p],
                     grad_logits_.data() + split_.first[p], config_.classes, rows,
                     split_.count[p]);
  return local_grad_logits_.data();
}

template <typename T>
void FcNet<T>::recompute(NetActivations<T>& a, size_t unit, int64_t rows, bool backward_next) {
  std::optional<ScopedPhase> timed;
  if (timer_) timed.emplace(*timer_, Phase::recompute);
  const T* x = unit == 0 ? a.input.data() : output_of(a, unit - 1);
  units_[unit].block->forward(x, output_of(a, unit), rows, recompute_, backward_next);
}

template <typename T>
void FcNet<T>::backward(int64_t rows, int64_t global_batch, bool accumulate) {
  backward(own_, rows, global_batch, accumulate, nullptr);
}

template <typename T>
void FcNet<T>::backward(NetActivations<T>& a, int64_t rows, int64_t global_batch,
                        bool accumulate, T* input_grad, DeferredWeightGrads<T>* deferred) {
  const T* dy = a.output_grad.data();
  if (is_last()) {
    device_.softmax_xent_backward<T>(grad_logits_.data(), a.probs.data(), a.labels.data(), rows,
                                     config_.classes, 1.0 / static_cast<double>(global_batch));
    dy = grad_logits_.data();
  }
  const bool checkpointed = config_.checkpoint_activations;
  // A stage's classifier input, not kept: recompute it (and its block's internals) first.
  if (checkpointed && units_.size() >= 2 && shares_output(units_.size() - 2))
    recompute(a, units_.size() - 2, rows, false);
  for (size_t i = units_.size(); i-- > 0;) {
    const T* x = i == 0 ? a.input.data() : output_of(a, i - 1);
    // Ping-pong through the scratch; the first unit's input gradient goes to the caller.
    T* dx = i == 0 ? input_grad : (dy == grad_a_.data() ? grad_b_.data() : grad_a_.data());
    run_unit(i, true, [&] {
      const Unit& u = units_[i];
      if (!u.block) {
        // The classifier's input, when recomputed into the stage's one buffer, is reused.
        linear_backward(device_, *u.linear, x,
                        u.linear == classifier_.get() ? local_grad_logits(rows) : dy, dx, rows,
                        accumulate, deferred, i > 0 && shares_output(i - 1));
        return;
      }
      // The recompute rewrites the block's output with the values it holds (the next unit's
      // backward, its only other reader, is done) and refills the shared set.
      if (checkpointed && !shares_output(i)) recompute(a, i, rows, true);
      u.block->backward(x, output_of(a, i), dy, dx, rows, accumulate, saved(a, i), scratch_,
                        deferred, checkpointed);
    });
    dy = dx;
  }
}

template <typename T>
std::vector<int32_t> FcNet<T>::predictions(const NetActivations<T>& a, int64_t rows) const {
  return predicted_classes(device_, a.probs.data(), rows, config_.classes);
}

template <typename T>
ForwardScratch<T> FcNet<T>::make_forward_scratch(int64_t rows) const {
  ForwardScratch<T> s;
  for (const Unit& u : units_)
    if (u.block) {
      s.block = u.block->make_activations(rows);
      break;
    }
  // Outputs of all but the last unit: a net of n units needs min(n − 1, 2) of them.
  if (units_.size() >= 2) s.ping = Buffer<T>(device_, rows * config_.hidden);
  if (units_.size() >= 3) s.pong = Buffer<T>(device_, rows * config_.hidden);
  return s;
}

template <typename T>
void FcNet<T>::forward_only(const T* x, T* y, int64_t rows, ForwardScratch<T>& scratch) {
  for (size_t i = 0; i < units_.size(); ++i) {
    T* out = i + 1 == units_.size() ? y : (i % 2 == 0 ? scratch.ping.data() : scratch.pong.data());
    if (units_[i].block) units_[i].block->forward(x, out, rows, scratch.block);
    else units_[i].linear->forward(x, out, rows, false);
    x = out;
  }
}

template struct NetActivations<float>;
template struct NetActivations<double>;
template struct ForwardScratch<float>;
template struct ForwardScratch<double>;
template class FcNet<float>;
template class FcNet<double>;
template struct NetActivations<bf16>;
template struct NetActivations<fp16>;
template struct ForwardScratch<bf16>;
template struct ForwardScratch<fp16>;
template class FcNet<bf16>;
template class FcNet<fp16>;

}  // namespace mlps
