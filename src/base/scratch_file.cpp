#include "src/base/scratch_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "src/base/errors.h"

namespace mlps {
namespace {

// The paths a signal handler may need to unlink: fixed storage, claimed and released by flag.
constexpr int kSlots = 16;
constexpr size_t kPathBytes = 4096;
char registered_paths[kSlots][kPathBytes];
std::atomic<bool> registered[kSlots];

int register_path(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (registered[i].load() || !registered[i].compare_exchange_strong(expected, true)) continue;
    std::memcpy(registered_paths[i], path.c_str(), path.size() + 1);
    return i;
  }
  return -1;
}

}  // namespace

void remove_scratch_files() {
  for (int i = 0; i < kSlots; ++i)
    if (registered[i].exchange(false)) ::unlink(registered_paths[i]);
}

ScratchBuffer::ScratchBuffer(uint64_t bytes) : bytes_(scratch_aligned(bytes)) {
  if (bytes_ == 0) return;
  data_.reset(static_cast<std::byte*>(std::aligned_alloc(kScratchAlignment, bytes_)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, bytes_);
}

void ScratchBuffer::Free::operator()(std::byte* p) const { std::free(p); }

ScratchFile::ScratchFile(const std::string& dir, int rank, bool direct, const std::string& kind) {
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  path_ = dir + "/mlpscale-" + host + "-" + std::to_string(::getpid()) + "-rank" +
          std::to_string(rank) + (kind.empty() ? "" : "-" + kind) + ".offload";
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) fail("cannot create", errno);
  // Set after the file exists: a file system without O_DIRECT (tmpfs) refuses it here, and the
  // file stays buffered.
  if (direct) {
    const int flags = ::fcntl(fd_, F_GETFL);
    direct_ = flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
  }
  slot_ = register_path(path_);
  if (slot_ < 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw OutputError(path_ + ": more than " + std::to_string(kSlots) +
                      " scratch files in one process, or a path too long");
  }
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
  if (slot_ >= 0 && registered[slot_].exchange(false)) ::unlink(path_.c_str());
}

void ScratchFile::fail(const std::string& what, int error) const {
  throw OutputError(path_ + ": " + what + " (" + std::strerror(error) + ")");
}

uint64_t ScratchFile::grow(uint64_t bytes) {
  const uint64_t at = size_;
  bytes = scratch_aligned(bytes);
  if (bytes == 0) return at;
  if (const int error = ::posix_fallocate(fd_, static_cast<off_t>(at), static_cast<off_t>(bytes)))
    fail("cannot reserve " + std::to_string(bytes) + " bytes", error);
  size_ += bytes;
  return at;
}

// pread or pwrite until all `bytes` moved (they may move fewer at a time, or be interrupted).
template <typename Transfer>
void ScratchFile::all_of(Transfer transfer, uint64_t bytes, uint64_t offset,
                         const char* what) const {
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = transfer(done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(what, n < 0 ? errno : EIO);
    done += static_cast<uint64_t>(n);
  }
}

void ScratchFile::read(void* to, uint64_t bytes, uint64_t offset) const {
  auto* p = static_cast<char*>(to);
  all_of([&](uint64_t at, uint64_t n, off_t o) { return ::pread(fd_, p + at, n, o); }, bytes,
         offset, "read failed");
}

void ScratchFile::write(const void* from, uint64_t bytes, uint64_t offset) const {
  const auto* p = static_cast<const char*>(from);
  all_of([&](uint64_t at, uint64_t n, off_t o) { return ::pwrite(fd_, p + at, n, o); }, bytes,
         offset, "write failed");
}

}  // namespace mlps
