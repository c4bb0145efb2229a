#include "src/optim/device_exchange.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace mlps {

#ifdef MLPSCALE_WITH_CUDA

template <typename T>
DeviceExchange<T>::DeviceExchange(Device& device, int64_t chunk)
    : device_(device), chunk_(std::max<int64_t>(1, chunk)) {
  if (device.kind() != DeviceKind::cuda)
    throw std::logic_error("DeviceExchange moves chunks between a GPU and the host");
  for (int b = 0; b < 2; ++b) {
    gradients_[b] = HostBuffer<Acc<T>>(device, chunk_);
    values_[b] = HostBuffer<T>(device, chunk_);
    down_[b] = cuda::event_create();
    up_[b] = cuda::event_create();
  }
  ordered_ = cuda::event_create();
}

template <typename T>
DeviceExchange<T>::~DeviceExchange() {
  for (void* e : {ordered_, down_[0], down_[1], up_[0], up_[1]}) cuda::event_destroy(e);
}

template <typename T>
int64_t DeviceExchange<T>::count_of(int64_t k) const {
  return std::min(chunk_, count_ - k * chunk_);
}

template <typename T>
void DeviceExchange<T>::wait(void* event) {
  const auto start = std::chrono::steady_clock::now();
  cuda::event_synchronize(event);
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <typename T>
void DeviceExchange<T>::download(int64_t k) {
  const int b = static_cast<int>(k % 2);
  const auto bytes = sizeof(Acc<T>) * static_cast<size_t>(count_of(k));
  cuda::copy_to_host_on_copies(gradients_[b].data(), grad_ + first_of(k), bytes);
  cuda::event_record_on_copies(down_[b]);
  bytes_down_ += static_cast<double>(bytes);
}

template <typename T>
void DeviceExchange<T>::begin(const Acc<T>* grad, T* value, int64_t count) {
  grad_ = grad, value_ = value, count_ = count;
  chunks_ = (count + chunk_ - 1) / chunk_;
  cuda::copies_wait_for_kernels(ordered_);
  if (chunks_ > 0) download(0);
}

template <typename T>
Acc<T>* DeviceExchange<T>::gradients(int64_t k) {
  // Chunk k+1 lands in the staging chunk k-1 used, which the host finished reading before it
  // asked for chunk k.
  if (k + 1 < chunks_) download(k + 1);
  const int b = static_cast<int>(k % 2);
  wait(down_[b]);
  return gradients_[b].data();
}

template <typename T>
T* DeviceExchange<T>::values(int64_t k) {
  const int b = static_cast<int>(k % 2);
  if (up_pending_[b]) wait(up_[b]);
  up_pending_[b] = false;
  return values_[b].data();
}

template <typename T>
void DeviceExchange<T>::upload(int64_t k) {
  const int b = static_cast<int>(k % 2);
  const auto bytes = sizeof(T) * static_cast<size_t>(count_of(k));
  cuda::copy_to_device_on_copies(value_ + first_of(k), values_[b].data(), bytes);
  cuda::event_record_on_copies(up_[b]);
  up_pending_[b] = true;
  bytes_up_ += static_cast<double>(bytes);
}

template <typename T>
void DeviceExchange<T>::end() {
  cuda::kernels_wait_for_copies(ordered_);
}

#else  // a build without CUDA has no GPU to exchange with

template <typename T>
DeviceExchange<T>::DeviceExchange(Device& device, int64_t chunk) : device_(device), chunk_(chunk) {
  throw std::logic_error("DeviceExchange needs a build with CUDA");
}
template <typename T>
DeviceExchange<T>::~DeviceExchange() = default;
template <typename T>
void DeviceExchange<T>::begin(const Acc<T>*, T*, int64_t) {}
template <typename T>
Acc<T>* DeviceExchange<T>::gradients(int64_t) { return nullptr; }
template <typename T>
T* DeviceExchange<T>::values(int64_t) { return nullptr; }
template <typename T>
void DeviceExchange<T>::upload(int64_t) {}
template <typename T>
void DeviceExchange<T>::end() {}

#endif

template class DeviceExchange<float>;
template class DeviceExchange<double>;
template class DeviceExchange<bf16>;
template class DeviceExchange<fp16>;

}  // namespace mlps
