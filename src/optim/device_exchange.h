#pragma once
// The GPU's side of offloaded optimizer state (ZeRO-Offload): the host updates a tensor a chunk
// at a time, so each chunk's gradient comes down into pinned host memory and its updated values
// go back up, on the copy stream (kernels.h). While the host updates chunk k, chunk k+1's
// gradient is already coming down and chunk k-1's values going up. The copies wait for the
// kernels queued before begin() (the gradients' reduction), and the kernels queued after end()
// (the next forward) wait for the last upload, on the device: the host waits only for the
// chunks it needs.
#include <cstdint>

#include "kernels/half_types.h"
#include "src/device/buffer.h"

namespace mlps {

template <typename T>
class DeviceExchange {
 public:
  // Pinned staging for two chunks of `chunk` elements each way (the CUDA backend's only).
  DeviceExchange(Device& device, int64_t chunk);
  ~DeviceExchange();
  DeviceExchange(const DeviceExchange&) = delete;
  DeviceExchange& operator=(const DeviceExchange&) = delete;

  // A tensor's update starts: `count` gradients at `grad`, values at `value` (device memory).
  void begin(const Acc<T>* grad, T* value, int64_t count);
  // Chunk k's gradients in host memory (k = 0, 1, ... in order): queues chunk k+1's download,
  // then waits for chunk k's.
  Acc<T>* gradients(int64_t k);
  // Where chunk k's updated values go, once the upload that last used that staging is done.
  T* values(int64_t k);
  // Queues chunk k's values up to the device.
  void upload(int64_t k);
  // The tensor is done: kernels queued from now on wait for its last upload.
  void end();

  double bytes_down() const { return bytes_down_; }
  double bytes_up() const { return bytes_up_; }
  double wait_seconds() const { return wait_seconds_; }  // the host blocked on copies

 private:
  int64_t first_of(int64_t k) const { return k * chunk_; }
  int64_t count_of(int64_t k) const;
  void download(int64_t k);
  void wait(void* event);
  Device& device_;
  int64_t chunk_;
  HostBuffer<Acc<T>> gradients_[2];
  HostBuffer<T> values_[2];
  void* ordered_ = nullptr;  // the kernels before begin(), then the copies before end()
  void* down_[2] = {nullptr, nullptr};
  void* up_[2] = {nullptr, nullptr};
  bool up_pending_[2] = {false, false};
  const Acc<T>* grad_ = nullptr;
  T* value_ = nullptr;
  int64_t count_ = 0, chunks_ = 0;
  double bytes_down_ = 0, bytes_up_ = 0, wait_seconds_ = 0;
};

}  // namespace mlps
