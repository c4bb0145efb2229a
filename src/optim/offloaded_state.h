#pragma once
// The optimizer's per-element state kept outside the memory its model computes in (--offload
// optimizer, ZeRO-Offload's idea): per tensor, a few arrays of its element count (Adam's two
// moments, the fp32 master) in host memory (--offload-to host, a GPU's run) or in one scratch
// file of the rank (--offload-to disk:DIR). An update visits them a chunk at a time. On disk the
// chunks stream through two staging buffers: while the current chunk is updated, the next is
// read and the one before written back, each on a thread of its own, so the disk works while
// the cores compute. The file is direct (O_DIRECT) where the file system allows it and a chunk is
// a multiple of its alignment (always, but in tests of tiny chunks): the update then moves its
// state at the device's rate, not through the page cache.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "src/base/scratch_file.h"

namespace mlps {

// Bytes of one array's chunk in one staging buffer: the update's working set in memory is
// 2 buffers x the arrays x this, whatever the model's size.
inline constexpr int64_t kOffloadChunkBytes = int64_t{4} << 20;

// What the state moved, for the run's summary and result file.
struct OffloadTraffic {
  double bytes_read = 0, bytes_written = 0;  // the scratch file's
  double wait_seconds = 0;  // the update's time blocked on reads and writes (and copies)
  double bytes_down = 0, bytes_up = 0;  // a GPU's gradients to the host, values back
  double host_update_seconds = 0;       // a GPU's: the host's update of the state
};

template <typename A>
class OffloadedState {
 public:
  using Update = std::function<void(int64_t first, int64_t count, A* const* arrays)>;

  // In a scratch file in `dir` named by `rank` (and `kind`, ScratchFile's), or in host memory
  // when `dir` is empty.
  OffloadedState(const std::string& dir, int rank,
                 int64_t chunk_elements = kOffloadChunkBytes / static_cast<int64_t>(sizeof(A)),
                 const std::string& kind = "");
  // A tensor of `count` elements with `initial.size()` arrays, each from its pointer (`count`
  // host elements) or zero (nullptr); returns the tensor's index for stream().
  int add(int64_t count, const std::vector<const A*>& initial);
  // update(first, n, arrays) for every chunk [first, first + n) of tensor `tensor` in order,
  // arrays[a] holding the chunk of its array a (written back after, on disk).
  void stream(int tensor, const Update& update);
  // Array 0 of tensor `tensor` whole, in host memory: where it is (host tier) or read into a
  // buffer of this object (disk; valid until the next read).
  const A* read(int tensor);
  // The same into `to`: read_bytes(tensor) of host memory, aligned to kScratchAlignment (a
  // ScratchBuffer). Callable on a thread of its own while no write() runs; counts no traffic.
  void read_into(int tensor, A* to) const;
  uint64_t read_bytes(int tensor) const;
  // Elements [first, first + n) of array 0 of tensor `tensor` from host `values`; `first` a
  // multiple of chunk_elements() (a direct file's alignment).
  void write(int tensor, int64_t first, int64_t n, const A* values);
  int64_t chunk_elements() const { return chunk_; }
  bool on_disk() const { return file_ != nullptr; }
  bool direct() const { return file_ && file_->direct(); }
  std::string path() const { return file_ ? file_->path() : std::string(); }
  uint64_t file_bytes() const { return file_ ? file_->size() : 0; }
  const OffloadTraffic& traffic() const { return traffic_; }

 private:
  struct Region {
    uint64_t offset;  // of array 0 in the file's bytes or host_'s elements
    int64_t count;
    int arrays;
    uint64_t stride;  // from one array to the next: bytes in the file (aligned), else elements
  };
  // Reads or writes chunk [first, first + n) of every array of `r` from or into buffer `b`.
  void move(bool write, const Region& r, int b, int64_t first, int64_t n);
  // Array a's chunk in staging buffer b, allocated for `arrays` arrays at the first use.
  A* staged(int b, int a);
  void stage_for(int arrays);
  // Where chunk [first, ...) of array a of `r` is in the file, and the bytes moving n elements.
  uint64_t location(const Region& r, int a, int64_t first) const;
  uint64_t transfer_bytes(int64_t n) const;
  void stream_host(const Region& r, const Update& update);
  std::unique_ptr<ScratchFile> file_;  // null: in host_
  std::vector<A> host_;
  int64_t chunk_;
  static constexpr int kMaxArrays = 4;
  std::vector<Region> regions_;
  uint64_t chunk_bytes_;  // a chunk's bytes in staging, aligned for a direct file
  ScratchBuffer staging_[2];  // arrays x chunk_bytes_ each
  ScratchBuffer whole_;       // read(): the largest array read so far
  OffloadTraffic traffic_;
};

}  // namespace mlps
