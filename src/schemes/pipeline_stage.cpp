#include "src/schemes/pipeline_stage.h"

#include <algorithm>
#include <optional>

#include "src/model/predicted_classes.h"

namespace mlps {

template <typename T>
size_t StageActivations<T>::bytes() const {
  size_t total = input.bytes() + labels.bytes() + probs.bytes() + output_grad.bytes();
  for (const auto& b : outputs) total += b.bytes();
  for (const auto& s : saved) total += s.bytes();
  return total;
}

template <typename T>
PipelineStage<T>::PipelineStage(Device& device, const ModelConfig& config, int first_unit,
                                int end_unit, int64_t micro_rows, uint64_t seed)
    : device_(device), config_(config), first_unit_(first_unit), end_unit_(end_unit),
      layers_(device, ParameterStorage::external) {
  const int64_t h = config.hidden;
  const int last_unit = static_cast<int>(config.layers) + 1;
  auto on_stage = [&](int unit) { return unit >= first_unit && unit < end_unit; };
  size_t first_param = 0, end_param = 0;
  // Creates unit `unit`'s layers after `make`, noting where this stage's parameters are.
  ParameterList<T>& params = layers_.parameters();
  auto build = [&](int unit, auto make) {
    const size_t before = params.size();
    make();
    if (unit == first_unit) first_param = before;
    if (on_stage(unit)) end_param = params.size();
  };
  build(0, [&] { embed_ = layers_.linear("embed", config.input_features(), h); });
  if (on_stage(0)) units_.push_back({embed_.get(), nullptr, h});
  for (int64_t l = 0; l < config.layers; ++l) {
    const int unit = static_cast<int>(l) + 1;
    build(unit, [&] {
      // Blocks of other stages exist only for their parameters' identities: no memory.
      blocks_.push_back(
          std::make_unique<MlpBlock<T>>(device, layers_, "block" + std::to_string(l), config));
    });
    if (on_stage(unit)) units_.push_back({nullptr, blocks_.back().get(), h});
  }
  build(last_unit, [&] { classifier_ = layers_.linear("classifier", h, config.classes); });
  if (on_stage(last_unit)) units_.push_back({classifier_.get(), nullptr, config.classes});

  int64_t elements = 0;
  for (size_t i = first_param; i < end_param; ++i) elements += params[i].size();
  values_ = Buffer<T>(device, elements);
  grads_ = Buffer<T>(device, elements);
  grads_.zero();
  std::vector<T> host(static_cast<size_t>(elements));
  int64_t offset = 0;
  for (size_t i = first_param; i < end_param; ++i) {
    Parameter<T>& p = params[i];
    fill_initial_shard(host.data() + offset, p.cols, seed, p.tensor_id, p.init, p.fan_in, 0, p.rows,
                       0, p.cols);
    p.value = Buffer<T>::view(device, values_.data() + offset, p.size());
    p.grad = Buffer<T>::view(device, grads_.data() + offset, p.size());
    offset += p.size();
  }
  values_.upload(host);

  // Every block has the same widths: one scratch fits the stage's blocks.
  const bool has_blocks = std::any_of(units_.begin(), units_.end(), [](const Unit& u) { return u.block; });
  if (has_blocks) block_scratch_ = make_block_scratch(device, blocks_, micro_rows);
  grad_a_ = Buffer<T>(device, micro_rows * h);
  grad_b_ = Buffer<T>(device, micro_rows * h);
  if (is_last()) grad_logits_ = Buffer<T>(device, micro_rows * config.classes);
  if (config.checkpoint_activations) {
    for (const Unit& u : units_)
      if (u.block) {
        recompute_ = u.block->make_activations(micro_rows);
        break;
      }
    if (is_last() && units_.size() >= 2 && units_[units_.size() - 2].block)
      recompute_output_ = Buffer<T>(device, micro_rows * h);
  }
}

template <typename T>
int64_t PipelineStage<T>::input_features() const {
  return is_first() ? config_.input_features() : config_.hidden;
}

template <typename T>
int64_t PipelineStage<T>::output_features() const {
  return is_last() ? config_.classes : config_.hidden;
}

template <typename T>
StageActivations<T> PipelineStage<T>::make_activations(int64_t rows) const {
  StageActivations<T> a;
  a.input = Buffer<T>(device_, rows * input_features());
  for (size_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    a.outputs.push_back(shares_output(i) ? Buffer<T>() : Buffer<T>(device_, rows * u.out_features));
    const bool keep = u.block && !config_.checkpoint_activations;
    a.saved.push_back(keep ? u.block->make_activations(rows) : BlockActivations<T>{});
  }
  if (is_last()) {
    a.labels = Buffer<int32_t>(device_, rows);
    a.probs = Buffer<T>(device_, rows * config_.classes);
  } else {
    a.output_grad = Buffer<T>(device_, rows * config_.hidden);
  }
  return a;
}

template <typename T>
void PipelineStage<T>::forward(StageActivations<T>& a, int64_t rows, T* row_loss) {
  const T* x = a.input.data();
  for (size_t i = 0; i < units_.size(); ++i) {
    T* y = output_of(a, i);
    if (units_[i].block)
      units_[i].block->forward(x, y, rows,
                               config_.checkpoint_activations ? recompute_ : a.saved[i]);
    else
      units_[i].linear->forward(x, y, rows, false);
    x = y;
  }
  if (is_last())
    device_.softmax_xent_forward<T>(a.probs.data(), row_loss, a.outputs.back().data(),
                                    a.labels.data(), rows, config_.classes);
}

template <typename T>
void PipelineStage<T>::backward(StageActivations<T>& a, int64_t rows, int64_t global_batch,
                                bool accumulate, T* input_grad) {
  const T* dy = a.output_grad.data();
  if (is_last()) {
    device_.softmax_xent_backward<T>(grad_logits_.data(), a.probs.data(), a.labels.data(), rows,
                                     config_.classes, 1.0 / static_cast<double>(global_batch));
    dy = grad_logits_.data();
  }
  const bool checkpointed = config_.checkpoint_activations;
  // The classifier's input, not kept: recompute it (and its block's internals) first.
  if (checkpointed && units_.size() >= 2 && shares_output(units_.size() - 2))
    recompute(a, units_.size() - 2, rows);
  for (size_t i = units_.size(); i-- > 0;) {
    const T* x = i == 0 ? a.input.data() : output_of(a, i - 1);
    // Ping-pong through the scratch; the first unit's input gradient goes to the caller.
    T* dx = i == 0 ? input_grad : (dy == grad_a_.data() ? grad_b_.data() : grad_a_.data());
    if (!units_[i].block) {
      units_[i].linear->backward(x, dy, dx, rows, accumulate);
    } else if (!checkpointed) {
      units_[i].block->backward(x, a.outputs[i].data(), dy, dx, rows, accumulate, a.saved[i],
                                block_scratch_);
    } else {
      if (!shares_output(i)) recompute(a, i, rows);  // else done above
      units_[i].block->backward(x, output_of(a, i), dy, dx, rows, accumulate, recompute_,
                                block_scratch_);
    }
    dy = dx;
  }
}

template <typename T>
void PipelineStage<T>::recompute(StageActivations<T>& a, size_t unit, int64_t rows) {
  std::optional<ScopedPhase> timed;
  if (timer_) timed.emplace(*timer_, Phase::recompute);
  const T* x = unit == 0 ? a.input.data() : output_of(a, unit - 1);
  units_[unit].block->forward(x, output_of(a, unit), rows, recompute_);
}

template <typename T>
ForwardScratch<T> PipelineStage<T>::make_forward_scratch(int64_t rows) const {
  ForwardScratch<T> s;
  for (const Unit& u : units_)
    if (u.block) {
      s.block = u.block->make_activations(rows);
      break;
    }
  // Outputs of all but the last unit: a stage of n units needs min(n − 1, 2) of them.
  if (units_.size() >= 2) s.ping = Buffer<T>(device_, rows * config_.hidden);
  if (units_.size() >= 3) s.pong = Buffer<T>(device_, rows * config_.hidden);
  return s;
}

template <typename T>
void PipelineStage<T>::forward_only(const T* x, T* y, int64_t rows, ForwardScratch<T>& scratch) {
  for (size_t i = 0; i < units_.size(); ++i) {
    T* out = i + 1 == units_.size() ? y : (i % 2 == 0 ? scratch.ping.data() : scratch.pong.data());
    if (units_[i].block) units_[i].block->forward(x, out, rows, scratch.block);
    else units_[i].linear->forward(x, out, rows, false);
    x = out;
  }
}

template <typename T>
std::vector<int32_t> PipelineStage<T>::predictions(const StageActivations<T>& a,
                                                   int64_t rows) const {
  return predicted_classes(device_, a.probs.data(), rows, config_.classes);
}

template struct ForwardScratch<float>;
template struct ForwardScratch<double>;
template struct StageActivations<float>;
template struct StageActivations<double>;
template class PipelineStage<float>;
template class PipelineStage<double>;

}  // namespace mlps
