#pragma once
// Points on a device's timeline inside a step, for spans read after it: on the GPU, events on
// the kernel stream, which the host reads only once the step's closing synchronisation has
// passed them (reading one earlier would wait for the device); elsewhere the host clock, taken
// once the device's work so far is done. The pipeline times its passes and bubble with them.
#include <chrono>
#include <cstddef>
#include <vector>

#include "src/device/device.h"

namespace mlps {

class DeviceMarks {
 public:
  explicit DeviceMarks(const Device& device);
  ~DeviceMarks();
  DeviceMarks(const DeviceMarks&) = delete;
  DeviceMarks& operator=(const DeviceMarks&) = delete;

  // A mark at this point of the device's work; its index, for seconds().
  size_t mark();
  // Seconds from mark `from` to mark `to`. On the GPU it waits for the device to pass `to`.
  double seconds(size_t from, size_t to) const;
  size_t size() const { return on_events_ ? events_.size() : host_.size(); }
  // Forgets the marks; their events are kept for the next ones.
  void clear();

 private:
  const Device& device_;
  bool on_events_ = false;
  std::vector<std::chrono::steady_clock::time_point> host_;
  std::vector<void*> events_;  // recorded since clear()
  std::vector<void*> spare_;
};

}  // namespace mlps
