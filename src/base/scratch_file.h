#pragma once
// A rank's scratch file: state it keeps on disk instead of in memory (--offload-to disk:DIR).
// Named by host, process and rank (DIR/mlpscale-<host>-<pid>-rank<R>.offload), never an
// existing file; removed when the object goes, and by remove_scratch_files() when a signal or
// a failing job ends the process first, so that a run leaves nothing in DIR. Space is reserved
// as the file grows (posix_fallocate), so a full disk is found when state is added, not halfway
// through a step; every failure is an OutputError naming the file and the system's reason.
#include <cstdint>
#include <string>

namespace mlps {

class ScratchFile {
 public:
  ScratchFile(const std::string& dir, int rank);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Reserves `bytes` more at the end; returns where they start.
  uint64_t grow(uint64_t bytes);
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
};

// Async-signal-safe: unlinks every scratch file of this process that is still there.
void remove_scratch_files();

}  // namespace mlps
