#pragma once
// What kind of file a path names, for the programs' input and output paths: a FIFO opened for
// reading blocks until a writer comes, a directory fails deep inside a stream, and a device or
// FIFO at an output path would be replaced. Checked up front, each gives one clear line.
#include <string>

namespace mlps {

// "a directory", "a FIFO", "a character device", "a block device", "a socket" or "not a regular
// file" when `path` names such a file; "" for a regular file or when nothing is there.
std::string non_regular_kind(const std::string& path);

// Why `path` cannot be read as an input file ("" when it is a regular file, or missing: the
// reader then says it cannot be read).
std::string input_file_problem(const std::string& path);

}  // namespace mlps
