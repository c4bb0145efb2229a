#pragma once
#include <stdexcept>
#include <string>

namespace mlps {

// Bad input from the user (options, config, data files, grid shapes): reported as one line
// with a non-zero exit, never as a crash.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An InputError that every rank of the job throws together, right after the collective that
// agreed on it (startup agreement, memory check): each rank prints its line and all exit 2
// normally. Any other error may be one rank's alone and ends the job (MpiSession::run).
class AgreedError : public InputError {
 public:
  using InputError::InputError;
};

// Writing an output failed (a full disk, a permission, an I/O error): one `error:` line and exit
// 1, not a crash report.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mlps
