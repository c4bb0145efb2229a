#pragma once
// Host vectors of a 16-bit storage type (kernels/half_types.h) and their float values, for the
// tests that hold typed storage against the emulation.
#include <vector>

#include "kernels/half_types.h"

namespace mlps::test {

template <typename S>
std::vector<S> typed(const std::vector<float>& x) {
  std::vector<S> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = from_float<S>(x[i]);
  return out;
}

template <typename S>
std::vector<float> widened(const std::vector<S>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = to_float(x[i]);
  return out;
}

}  // namespace mlps::test
