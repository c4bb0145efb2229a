#include "src/optim/optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/half_types.h"
#include "kernels/kernel_traffic.h"

namespace mlps {

template <typename T>
Optimizer<T>::Optimizer(Device& device, const OptimizerConfig& config, MPI_Comm consensus)
    : device_(device), config_(config), consensus_(consensus),
      mixed_(is_16bit_v<T> ||
             (std::is_same_v<T, float> && device.storage_format() != StorageFormat::full)) {
  if (is_16bit_v<T> && device.storage_format() == StorageFormat::full)
    throw std::logic_error("16-bit tensors on a Device of full storage");
  if (mixed_ && device.storage_format() == StorageFormat::fp16) {
    scaler_.emplace();
    device_.set_loss_scale(scaler_->scale());
    nonfinite_total_ = Buffer<uint64_t>(device_, 1);
  }
}

template <typename T>
int Optimizer<T>::state_arrays() const {
  return (config_.kind == OptimizerKind::adam ? 2 : 0) + (mixed_ || offloaded_master() ? 1 : 0);
}

template <typename T>
void Optimizer<T>::offload_state_to(const std::string& dir, int rank, bool values_too) {
  if (!slots_.empty()) throw std::logic_error("offload_state_to after add()");
  values_offloaded_ = values_too;
  if (dir.empty() && device_.kind() != DeviceKind::cuda)
    throw std::logic_error("the CPU backend's state is in host memory already");
  offloaded_ = std::make_unique<OffloadedState<Acc<T>>>(dir, rank);
  if (device_.kind() == DeviceKind::cuda) {
    exchange_ = std::make_unique<DeviceExchange<T>>(device_, offloaded_->chunk_elements());
    host_ = std::make_unique<Device>(DeviceConfig(DeviceKind::cpu, device_.storage_format()));
  } else if (values_too) {
    chunk_values_.resize(static_cast<size_t>(offloaded_->chunk_elements()));
  }
}

template <typename T>
OffloadTraffic Optimizer<T>::offload_traffic() const {
  if (!offloaded_) return {};
  OffloadTraffic t = offloaded_->traffic();
  if (exchange_) {
    t.bytes_down = exchange_->bytes_down();
    t.bytes_up = exchange_->bytes_up();
    t.wait_seconds += exchange_->wait_seconds();
    t.host_update_seconds = host_update_seconds_;
  }
  return t;
}

// Moments from zero; the master from its fp32 start (typed), else the unrounded value, which a
// GPU's run brings to the host first.
template <typename T>
void Optimizer<T>::add_offloaded(Slot& slot, const Acc<T>* initial_master) {
  std::vector<const Acc<T>*> initial(static_cast<size_t>(state_arrays()), nullptr);
  std::vector<Acc<T>> downloaded;
  if (mixed_ || offloaded_master()) {
    if (values_offloaded_) {
      if (!initial_master) throw std::logic_error("offloaded values need their fp32 start");
      initial.back() = initial_master;
    } else if constexpr (is_16bit_v<T>) {
      if (!initial_master) throw std::logic_error("typed storage's master needs its fp32 start");
      initial.back() = initial_master;
    } else if (exchanged()) {
      downloaded.resize(static_cast<size_t>(slot.count));
      device_.to_host(downloaded.data(), slot.value, sizeof(T) * downloaded.size());
      initial.back() = downloaded.data();
    } else {
      initial.back() = slot.value;  // the CPU backend's memory is the host's
    }
  }
  slot.offloaded = offloaded_->add(slot.count, initial);
  if constexpr (!is_16bit_v<T>)
    if (mixed_ && slot.value) device_.round_to_storage(slot.value, slot.count);
}

template <typename T>
void Optimizer<T>::add_offloaded_values(Acc<T>* grad, int64_t count,
                                        const Acc<T>* initial_master, ValuesOut out) {
  if (!values_offloaded_)
    throw std::logic_error("add_offloaded_values without offload_state_to(..., true)");
  Slot slot{nullptr, grad, count, {}, {}, {}, 0, -1, std::move(out)};
  add_offloaded(slot, initial_master);
  slots_.push_back(std::move(slot));
}

template <typename T>
void Optimizer<T>::add(T* value, Acc<T>* grad, int64_t count, const Acc<T>* initial_master) {
  if (values_offloaded_) throw std::logic_error("add() of values offloaded: add_offloaded_values");
  Slot slot{value, grad, count, {}, {}, {}, 0, -1, {}};
  if (offloaded_) {
    add_offloaded(slot, initial_master);
    slot_of_[value] = slots_.size();
    slots_.push_back(std::move(slot));
    return;
  }
  if constexpr (is_16bit_v<T>) {
    if (!initial_master) throw std::logic_error("typed storage's master needs its fp32 start");
    slot.master = Buffer<Acc<T>>(device_, count);
    device_.to_device(slot.master.data(), initial_master, slot.master.bytes());
  } else if (mixed_) {
    slot.master = Buffer<T>(device_, count);
    device_.copy(slot.master.data(), value, sizeof(T) * static_cast<size_t>(count));
    device_.round_to_storage(value, count);
  }
  if (config_.kind == OptimizerKind::adam) {
    slot.m = Buffer<Acc<T>>(device_, count);
    slot.v = Buffer<Acc<T>>(device_, count);
    slot.m.zero();
    slot.v.zero();
  }
  slot_of_[value] = slots_.size();
  slots_.push_back(std::move(slot));
}

// Every tensor's count goes into one total on the device, read back once: one wait per step.
template <typename T>
bool Optimizer<T>::gradients_finite_everywhere() {
  nonfinite_total_.zero();
  for (const auto& s : slots_) device_.add_nonfinite_count(nonfinite_total_.data(), s.grad, s.count);
  int nonfinite = nonfinite_total_.download().front() > 0 ? 1 : 0;
  int anywhere = 0;
  MPI_Allreduce(&nonfinite, &anywhere, 1, MPI_INT, MPI_MAX, consensus_);
  return anywhere == 0;
}

template <typename T>
bool Optimizer<T>::step() {
  gradients_zeroed_ = false;
  if (!open_) {
    double grad_scale = 1.0;
    if (scaler_) {
      const double used = scaler_->scale();
      const bool apply = scaler_->update(!gradients_finite_everywhere());
      device_.set_loss_scale(scaler_->scale());
      if (!apply) return false;
      grad_scale = 1.0 / used;
    }
    begin_step(grad_scale);
  }
  for (auto& s : slots_) {
    if (s.offloaded >= 0 && exchanged()) {
      step_exchanged(s);
    } else if (s.offloaded >= 0) {
      step_streamed(s);
    } else if (s.fused == 0) update(s, 0, s.grad, s.count, after_);
    else if (s.fused != s.count)
      throw std::logic_error("the fused update covered part of a tensor");
    s.fused = 0;
  }
  open_ = false;
  gradients_zeroed_ = after_ == GradAfterUpdate::zeroed;
  return true;
}

template <typename T>
void Optimizer<T>::step_streamed(Slot& s) {
  offloaded_->stream(s.offloaded, [&](int64_t first, int64_t count, Acc<T>* const* arrays) {
    if (!s.values_out)
      return update(device_, s.value + first, s.grad + first, count, after_,
                    offloaded_at(arrays));
    update(device_, chunk_values_.data(), s.grad + first, count, after_, offloaded_at(arrays));
    s.values_out(first, count, chunk_values_.data());
  });
}

template <typename T>
void Optimizer<T>::step_exchanged(Slot& s) {
  exchange_->begin(s.grad, s.value, s.count);
  offloaded_->stream(s.offloaded, [&](int64_t first, int64_t count, Acc<T>* const* arrays) {
    if (count == 0) return;
    const int64_t k = first / offloaded_->chunk_elements();
    Acc<T>* grad = exchange_->gradients(k);
    T* value = exchange_->values(k);
    const auto start = std::chrono::steady_clock::now();
    update(*host_, value, grad, count, GradAfterUpdate::kept, offloaded_at(arrays));
    host_update_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s.values_out) s.values_out(first, count, value);  // they stay on the host
    else exchange_->upload(k);
  });
  exchange_->end();
  // Queued after the last download, which end() ordered the kernels after.
  if (after_ == GradAfterUpdate::zeroed)
    device_.zero(s.grad, sizeof(Acc<T>) * static_cast<size_t>(s.count));
}

template <typename T>
void Optimizer<T>::zero_gradients_after_step() {
  if (block_.size() > 0)
    throw std::logic_error("the fused update's gradients are in its block: nothing to zero");
  after_ = GradAfterUpdate::zeroed;
}

template <typename T>
void Optimizer<T>::begin_step(double grad_scale) {
  ++steps_;
  open_ = true;
  step_ = AdamStep{config_.lr, config_.beta1, config_.beta2, config_.eps,
                   1.0 - std::pow(config_.beta1, static_cast<double>(steps_)),
                   1.0 - std::pow(config_.beta2, static_cast<double>(steps_)), grad_scale};
}

template <typename T>
typename Optimizer<T>::State Optimizer<T>::state_at(Slot& s, int64_t first) {
  State state;
  if (s.m.size() > 0) state.m = s.m.data() + first, state.v = s.v.data() + first;
  if (s.master.size() > 0) state.master = s.master.data() + first;
  return state;
}

template <typename T>
typename Optimizer<T>::State Optimizer<T>::offloaded_at(Acc<T>* const* arrays) const {
  State state;
  if (!arrays) return state;  // a tensor without state, or of no elements
  const bool adam = config_.kind == OptimizerKind::adam;
  if (adam) state.m = arrays[0], state.v = arrays[1];
  if (mixed_ || offloaded_master()) state.master = arrays[adam ? 2 : 0];
  return state;
}

template <typename T>
void Optimizer<T>::update(Slot& s, int64_t first, Acc<T>* grad, int64_t count,
                          GradAfterUpdate after) {
  update(device_, s.value + first, grad, count, after, state_at(s, first));
}

template <typename T>
void Optimizer<T>::update(const Device& on, T* value, Acc<T>* grad, int64_t count,
                          GradAfterUpdate after, const State& state) {
  if constexpr (is_16bit_v<T>) {  // the master updated, writing the 16-bit tensor as it goes
    if (config_.kind == OptimizerKind::sgd)
      return on.sgd_update_16bit(state.master, value, grad, count, step_.lr * step_.grad_scale,
                                 after);
    return on.adam_update_16bit(state.master, value, grad, state.m, state.v, count, step_,
                                after);
  } else {
    if constexpr (std::is_same_v<T, float>) {
      if (mixed_) {  // emulated: the master updated, the value rewritten from it, rounded
        if (config_.kind == OptimizerKind::sgd)
          return on.sgd_update_rounded(state.master, value, grad, count,
                                       step_.lr * step_.grad_scale, after);
        return on.adam_update_rounded(state.master, value, grad, state.m, state.v, count,
                                      step_, after);
      }
    }
    T* param = state.master ? state.master : value;
    if (config_.kind == OptimizerKind::sgd)
      on.sgd_update<T>(param, grad, count, step_.lr * step_.grad_scale, after);
    else
      on.adam_update<T>(param, grad, state.m, state.v, count, step_, after);
    if (state.master) std::copy(param, param + count, value);  // host memory, both
  }
}

template <typename T>
void Optimizer<T>::enable_fused_update(int64_t block_elements) {
  if (mixed_) throw std::logic_error("the update of 16-bit storage cannot be fused");
  if (offloaded_) throw std::logic_error("the update of offloaded state cannot be fused");
  if (after_ == GradAfterUpdate::zeroed)
    throw std::logic_error("the fused update keeps no gradients for step() to zero");
  block_ = Buffer<T>(device_, block_elements);
}

template <typename T>
int64_t Optimizer<T>::block_rows(int64_t width) const {
  return std::max<int64_t>(1, block_.size() / width);
}

template <typename T>
void Optimizer<T>::apply_block(const T* value, int64_t first, int64_t count) {
  const auto it = slot_of_.find(value);
  if (!open_ || it == slot_of_.end() || count > block_.size())
    throw std::logic_error("apply_block outside an open step, or on an unregistered tensor");
  Slot& s = slots_[it->second];
  if constexpr (is_16bit_v<T>) throw std::logic_error("the update of 16-bit storage cannot be fused");
  else update(s, first, block_.data(), count, GradAfterUpdate::kept);
  s.fused += count;
}

template <typename T>
double Optimizer<T>::bytes_per_step() const {
  // Mixed precision adds writing the 16-bit copy (in the update's own pass): a float holding it
  // when emulated, 2 bytes when typed; the rest moves in fp32.
  double bytes = 0;
  for (const auto& s : slots_)
    bytes += (config_.kind == OptimizerKind::adam ? traffic::adam_update(s.count, after_)
                                                  : traffic::sgd_update(s.count, after_)) *
                 sizeof(Acc<T>) +
             (mixed_ ? static_cast<double>(s.count) * sizeof(T) : 0.0);
  return bytes;
}

template class Optimizer<float>;
template class Optimizer<double>;
template class Optimizer<bf16>;
template class Optimizer<fp16>;

}  // namespace mlps
