#pragma once
// Counter-based random numbers (weights, synthetic data, shuffles): every value is a pure
// function of a key and a counter (splitmix64's mixer), so any rank can make any sample or
// permutation entry alone, in any order, with the same bits on every platform and compiler (no
// std distributions, whose outputs are implementation-defined).
#include <cstdint>

namespace mlps {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// splitmix64's finalizer: a bijection on 64 bits with good avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Folds one more field into a key: hash_combine(hash_combine(seed, a), b) keys (seed, a, b).
constexpr uint64_t hash_combine(uint64_t key, uint64_t value) {
  return mix64(key ^ mix64(value + kGoldenGamma));
}

// The stream of values for one key: value k is mix64(key + k * gamma), as splitmix64 itself.
class CounterStream {
 public:
  explicit constexpr CounterStream(uint64_t key) : key_(mix64(key)) {}

  constexpr uint64_t next() { return mix64(key_ + (++counter_) * kGoldenGamma); }

  // Uniform in [0, 1) with 53 random bits.
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  constexpr double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Uniform integer in [0, n) by the multiply-high method; the bias is below n / 2^64.
  constexpr uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace mlps
