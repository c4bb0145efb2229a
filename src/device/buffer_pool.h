#pragma once
// Buffers a training step takes and gives back (ZeRO-2's gradient buckets, ZeRO-3's gathered
// units and their reductions, the zero-bubble pipeline's deferred weight-gradient inputs), kept
// for the next step instead of freed: cudaFree waits for the whole GPU, and a steady-state step
// allocates nothing. A buffer given back serves the next request of exactly its size, so a step
// that repeats the last one's requests takes only kept buffers; reserve() allocates them before
// the first step where the scheme knows how many it holds at once.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include "src/device/buffer.h"

namespace mlps {

template <typename T>
class BufferPool {
 public:
  BufferPool() = default;  // one to assign to
  explicit BufferPool(Device& device) : device_(&device) {}

  // An owning buffer of `count` elements: a kept one when there is, else a new one (counted
  // by the Device: in a steady-state step, a failure of the scheme's sizing).
  Buffer<T> take(int64_t count) {
    auto it = spare_.find(count);
    if (it == spare_.end() || it->second.empty()) return Buffer<T>(*device_, count);
    Buffer<T> buffer = std::move(it->second.back());
    it->second.pop_back();
    return buffer;
  }
  // Keeps `buffer` (one that take() returned) for a later take of its size.
  void give(Buffer<T>&& buffer) {
    if (buffer.size() == 0) return;
    if (!buffer.owning()) throw std::logic_error("BufferPool::give: a view owns no memory");
    spare_[buffer.size()].push_back(std::move(buffer));
  }
  // Keeps at least `buffers` buffers of `count` elements, allocated now.
  void reserve(int64_t count, int buffers) {
    std::vector<Buffer<T>>& kept = spare_[count];
    while (static_cast<int>(kept.size()) < buffers) kept.emplace_back(*device_, count);
  }

 private:
  Device* device_ = nullptr;
  std::map<int64_t, std::vector<Buffer<T>>> spare_;  // by element count
};

}  // namespace mlps
