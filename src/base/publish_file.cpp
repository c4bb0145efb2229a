#include "src/base/publish_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "src/base/errors.h"
#include "src/base/file_kind.h"

namespace mlps {
namespace {

[[noreturn]] void fail_with_errno(const std::string& what, int error) {
  throw OutputError(what + ": " + std::generic_category().message(error));
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// All of `bytes`, then fsync: a full disk shows up here (some file systems only at fsync),
// before anything is linked into place.
void write_and_sync(int fd, std::span<const char> bytes) {
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_with_errno("writing " + std::to_string(bytes.size()) + " bytes", errno);
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  if (::fsync(fd) != 0) fail_with_errno("flushing to disk", errno);
}

void test_delay() {
  if (const char* ms = std::getenv("MLPSCALE_TEST_PUBLISH_DELAY_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(ms)));
}

void publish_through_named_temporary(const std::string& path, std::span<const char> bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  try {
    {
      FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (fd.get() < 0) fail_with_errno("cannot create " + temporary, errno);
      write_and_sync(fd.get(), bytes);
    }
    test_delay();
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      fail_with_errno("cannot rename " + temporary + " to " + path, errno);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

}  // namespace

std::string output_target_problem(const std::string& path) {
  const std::string kind = non_regular_kind(path);
  return kind.empty() ? "" : path + " is " + kind + ": only a regular file is replaced";
}

void publish_file(const std::string& path, std::span<const char> bytes) {
  // Checked again here, though every program checked before its work: unlinking a device or a
  // FIFO (as root, /dev/full) would destroy it.
  if (const std::string problem = output_target_problem(path); !problem.empty())
    throw OutputError(problem);
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string directory = parent.empty() ? "." : parent.string();
  FileDescriptor fd(::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    // EOPNOTSUPP, EISDIR or EINVAL: a file system (or kernel) without unnamed files.
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)
      return publish_through_named_temporary(path, bytes);
    fail_with_errno("cannot create a file in " + directory, errno);
  }
  write_and_sync(fd.get(), bytes);
  test_delay();
  // linkat does not replace an existing file, so the finished file is linked under a name of
  // its own and renamed over `path`: atomic, so a reader or a kill never sees a partial file,
  // and of several runs writing one path the last to finish wins.
  const std::string named = path + ".tmp." + std::to_string(getpid());
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  ::unlink(named.c_str());  // a SIGKILLed run's leftover of this name (its pid reused)
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    // No /proc (some containers) or no permission to link: the bytes are still here.
    if (errno == ENOENT || errno == EPERM || errno == EACCES)
      return publish_through_named_temporary(path, bytes);
    fail_with_errno("cannot link the written file as " + named, errno);
  }
  if (std::rename(named.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(named.c_str());
    fail_with_errno("cannot rename " + named + " to " + path, error);
  }
}

}  // namespace mlps
