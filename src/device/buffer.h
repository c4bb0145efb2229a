#pragma once
// Typed memory on a Device: owning (allocated and freed through the Device, so peak memory is
// counted) or a view into another buffer (flat gradient buckets, gathered shards). Move-only so
// that ownership of device memory is obvious.
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/device/device.h"

namespace mlps {

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device& device, int64_t count) : device_(&device), count_(count) {
    data_ = count > 0 ? static_cast<T*>(device.allocate(bytes())) : nullptr;
  }
  // A non-owning view of count elements at data (memory of device).
  static Buffer view(Device& device, T* data, int64_t count) {
    Buffer b;
    b.device_ = &device;
    b.data_ = data;
    b.count_ = count;
    b.owning_ = false;
    return b;
  }
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = std::exchange(other.device_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      owning_ = std::exchange(other.owning_, true);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(count_) * sizeof(T); }
  bool owning() const { return owning_; }

  void zero() { if (data_) device_->zero(data_, bytes()); }
  void upload(const std::vector<T>& host) {
    // Callers size host vectors from size(); a mismatch is a programming error.
    if (static_cast<int64_t>(host.size()) != count_) throw std::logic_error("Buffer::upload size");
    if (data_) device_->to_device(data_, host.data(), bytes());
  }
  std::vector<T> download() const {
    std::vector<T> host(static_cast<size_t>(count_));
    if (data_) device_->to_host(host.data(), data_, bytes());
    return host;
  }

 private:
  void reset() {
    if (owning_ && device_ && data_) device_->release(data_, bytes());
    data_ = nullptr;
  }
  Device* device_ = nullptr;
  T* data_ = nullptr;
  int64_t count_ = 0;
  bool owning_ = true;
};

// Host memory of a Device's staging (pinned on CUDA), for copies between host and device that
// the host does not wait for: a step's inputs go up and its losses come down through it, and
// the step's closing synchronisation completes them. Owning and move-only, as Buffer.
template <typename T>
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(Device& device, int64_t count) : device_(&device), count_(count) {
    data_ = count > 0 ? static_cast<T*>(device.host_allocate(bytes())) : nullptr;
  }
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& other) noexcept { *this = std::move(other); }
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = std::exchange(other.device_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(count_) * sizeof(T); }

  // Queues the copy of elements [first, first + count) to device memory `dst`.
  void upload(T* dst, int64_t first, int64_t count) const {
    check(first, count);
    device_->to_device_queued(dst, data_ + first, sizeof(T) * static_cast<size_t>(count));
  }
  // Queues the copy of `count` elements of device memory `src` to [first, first + count).
  void download(const T* src, int64_t first, int64_t count) {
    check(first, count);
    device_->to_host_queued(data_ + first, src, sizeof(T) * static_cast<size_t>(count));
  }

 private:
  void check(int64_t first, int64_t count) const {
    // Callers size staging from their largest pass; a mismatch is a programming error.
    if (first < 0 || count < 0 || first + count > count_)
      throw std::logic_error("HostBuffer: copy outside the staging");
  }
  void reset() {
    if (device_ && data_) device_->host_release(data_);
    data_ = nullptr;
  }
  Device* device_ = nullptr;
  T* data_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace mlps
