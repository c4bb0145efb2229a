#include "src/timing/device_marks.h"

#include <stdexcept>

namespace mlps {

DeviceMarks::DeviceMarks(const Device& device)
    : device_(device), on_events_(device.kind() == DeviceKind::cuda) {}

DeviceMarks::~DeviceMarks() {
#ifdef MLPSCALE_WITH_CUDA
  for (void* e : events_) cuda::event_destroy(e);
  for (void* e : spare_) cuda::event_destroy(e);
#endif
}

size_t DeviceMarks::mark() {
#ifdef MLPSCALE_WITH_CUDA
  if (on_events_) {
    void* event = nullptr;
    if (spare_.empty()) {
      event = cuda::event_create();
    } else {
      event = spare_.back();
      spare_.pop_back();
    }
    events_.push_back(event);
    cuda::event_record(event);
    return events_.size() - 1;
  }
#endif
  device_.synchronize();
  host_.push_back(std::chrono::steady_clock::now());
  return host_.size() - 1;
}

double DeviceMarks::seconds(size_t from, size_t to) const {
  if (from >= size() || to >= size()) throw std::logic_error("DeviceMarks: no such mark");
#ifdef MLPSCALE_WITH_CUDA
  if (on_events_) return cuda::event_elapsed_seconds(events_[from], events_[to]);
#endif
  return std::chrono::duration<double>(host_[to] - host_[from]).count();
}

void DeviceMarks::clear() {
  spare_.insert(spare_.end(), events_.begin(), events_.end());
  events_.clear();
  host_.clear();
}

}  // namespace mlps
