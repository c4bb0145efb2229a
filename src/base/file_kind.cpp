#include "src/base/file_kind.h"

#include <sys/stat.h>

namespace mlps {

std::string non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return S_ISDIR(st.st_mode)    ? "a directory"
         : S_ISCHR(st.st_mode)  ? "a character device"
         : S_ISBLK(st.st_mode)  ? "a block device"
         : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "not a regular file";
}

std::string input_file_problem(const std::string& path) {
  const std::string kind = non_regular_kind(path);
  return kind.empty() ? "" : path + " is " + kind + ", not a file to read";
}

}  // namespace mlps
