#pragma once
#include <stdexcept>
#include <string>

namespace mlps {

// Bad input from the user (options, config, data files, grid shapes): reported as one line
// on every rank with a non-zero exit, never as a crash.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mlps
