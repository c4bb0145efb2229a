#pragma once
// The optimizer's per-element state kept on disk instead of in memory (--offload optimizer
// --offload-to disk:DIR, ZeRO-Offload's idea with a file for the host): per tensor, a few arrays
// of its element count (Adam's two moments, the fp32 master of 16-bit storage) in one scratch
// file of the rank. An update streams them through two staging buffers a chunk at a time: while
// the current chunk is updated, the next is read and the one before written back, each on a
// thread of its own, so the disk works while the cores compute.
#include <cstdint>
#include <functional>
#include <vector>

#include "src/base/scratch_file.h"

namespace mlps {

// Bytes of one array's chunk in one staging buffer: the update's working set in memory is
// 2 buffers x the arrays x this, whatever the model's size.
inline constexpr int64_t kOffloadChunkBytes = int64_t{4} << 20;

// What the state moved, for the run's summary and result file.
struct OffloadTraffic {
  double bytes_read = 0, bytes_written = 0;
  double wait_seconds = 0;  // the update's time blocked on reads and writes
};

template <typename A>
class OffloadedState {
 public:
  using Update = std::function<void(int64_t first, int64_t count, A* const* arrays)>;

  OffloadedState(const std::string& dir, int rank,
                 int64_t chunk_elements = kOffloadChunkBytes / static_cast<int64_t>(sizeof(A)));
  // A tensor of `count` elements with `initial.size()` arrays, each from its pointer (`count`
  // host elements) or zero (nullptr); returns the tensor's index for stream().
  int add(int64_t count, const std::vector<const A*>& initial);
  // update(first, n, arrays) for every chunk [first, first + n) of tensor `tensor`, arrays[a]
  // holding the chunk of its array a, written back after.
  void stream(int tensor, const Update& update);
  const std::string& path() const { return file_.path(); }
  uint64_t file_bytes() const { return file_.size(); }
  const OffloadTraffic& traffic() const { return traffic_; }

 private:
  struct Region {
    uint64_t offset;  // bytes, of array 0; array a at offset + a * count elements
    int64_t count;
    int arrays;
  };
  // Reads or writes chunk [first, first + n) of every array of `r` from or into buffer `b`.
  void move(bool write, const Region& r, int b, int64_t first, int64_t n);
  ScratchFile file_;
  int64_t chunk_;
  static constexpr int kMaxArrays = 4;
  std::vector<Region> regions_;
  std::vector<A> staging_[2];  // arrays x chunk each, allocated at the first stream()
  OffloadTraffic traffic_;
};

}  // namespace mlps
