#pragma once
// A rank's scratch file: state it keeps on disk instead of in memory (--offload-to disk:DIR).
// Named by host, process and rank (DIR/mlpscale-<host>-<pid>-rank<R>.offload, or
// ...-rank<R>-<kind>.offload for a rank's second file), never an existing file; removed when the object goes, and by remove_scratch_files() when a signal or
// a failing job ends the process first, so that a run leaves nothing in DIR. Space is reserved
// as the file grows (posix_fallocate), so a full disk is found when state is added, not halfway
// through a step; every failure is an OutputError naming the file and the system's reason.
// Direct (O_DIRECT, where the file system allows it): reads and writes bypass the page cache, so
// they move at the device's rate, not the memory's; their buffers, offsets and lengths must then
// be multiples of kScratchAlignment (ScratchBuffer), and grow() keeps the file so.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mlps {

inline constexpr uint64_t kScratchAlignment = 4096;

inline uint64_t scratch_aligned(uint64_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

// Host memory a direct ScratchFile can move: `bytes` rounded up to kScratchAlignment, aligned
// to it, zeroed.
class ScratchBuffer {
 public:
  explicit ScratchBuffer(uint64_t bytes = 0);
  std::byte* data() { return data_.get(); }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  uint64_t bytes_ = 0;
};

class ScratchFile {
 public:
  // direct: bypass the page cache if the file system allows it (direct() says if it did).
  ScratchFile(const std::string& dir, int rank, bool direct = false,
              const std::string& kind = "");
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Reserves `bytes` more at the end, rounded up to kScratchAlignment; returns where they start.
  uint64_t grow(uint64_t bytes);
  bool direct() const { return direct_; }
  void read(void* to, uint64_t bytes, uint64_t offset) const;
  void write(const void* from, uint64_t bytes, uint64_t offset) const;
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const;
  template <typename Transfer>
  void all_of(Transfer transfer, uint64_t bytes, uint64_t offset, const char* what) const;
  std::string path_;
  int fd_ = -1;
  int slot_ = -1;  // in the registry remove_scratch_files() empties
  uint64_t size_ = 0;
  bool direct_ = false;
};

// Async-signal-safe: unlinks every scratch file of this process that is still there.
void remove_scratch_files();

}  // namespace mlps
