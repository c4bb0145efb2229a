// The memory a kernel benchmark works on: random tensors of chosen sizes plus class labels, made
// once per benchmark and kept while Google Benchmark calls it repeatedly.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/half_types.h"
#include "src/device/buffer.h"
#include "src/device/device.h"

namespace mlps::kernel_bench {

template <typename T>
const char* type_name();
template <>
inline const char* type_name<float>() { return "f32"; }
template <>
inline const char* type_name<double>() { return "f64"; }
template <>
inline const char* type_name<bf16>() { return "bf16"; }

// Random values of magnitude in [0.1, 1] (never zero), of random sign unless `positive`.
template <typename T>
std::vector<T> random_values(int64_t count, uint64_t seed, bool positive) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.1, 1.0);
  std::vector<T> values(static_cast<size_t>(count));
  for (auto& v : values) {
    const double x = magnitude(rng);
    const double signed_x = positive || (rng() & 1) ? x : -x;
    if constexpr (is_16bit_v<T>)
      v = from_float<T>(static_cast<float>(signed_x));
    else
      v = static_cast<T>(signed_x);
  }
  return values;
}

// One input or output tensor of a benchmark; `positive` for those that must be (Adam's v, rstd).
struct TensorSpec {
  TensorSpec(int64_t count, bool positive = false) : count(count), positive(positive) {}
  int64_t count;
  bool positive;
};

// The tensors in spec order, plus class labels.
template <typename T>
struct Tensors {
  std::vector<Buffer<T>> tensors;
  Buffer<int32_t> labels;
  T* operator[](size_t i) { return tensors[i].data(); }
};

template <typename T>
std::shared_ptr<Tensors<T>> make_tensors(Device& device, const std::vector<TensorSpec>& specs,
                                         int64_t label_count, int64_t classes) {
  auto t = std::make_shared<Tensors<T>>();
  uint64_t seed = 1;
  for (const auto& spec : specs) {
    t->tensors.emplace_back(device, spec.count);
    t->tensors.back().upload(random_values<T>(spec.count, seed++, spec.positive));
  }
  if (label_count > 0) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
    std::vector<int32_t> host(static_cast<size_t>(label_count));
    for (auto& l : host) l = label(rng);
    t->labels = Buffer<int32_t>(device, label_count);
    t->labels.upload(host);
  }
  return t;
}

// The inputs of the benchmark that ran last. Google Benchmark calls a benchmark several times
// while it settles the iteration count; building inputs (random fill, upload) once per benchmark
// keeps the run short, and dropping the previous benchmark's inputs keeps one set in memory.
class InputCache {
 public:
  // Returns the inputs for `key` and whether they were just made.
  template <typename Inputs, typename Make>
  std::pair<Inputs&, bool> get(const std::string& key, Make&& make) {
    const bool fresh = key != key_;
    if (fresh) {
      clear();  // free first: two benchmarks' inputs need not fit at once
      inputs_ = make();
      key_ = key;
    }
    return {*static_cast<Inputs*>(inputs_.get()), fresh};
  }
  void clear() {
    inputs_.reset();
    key_.clear();
  }

 private:
  std::string key_;
  std::shared_ptr<void> inputs_;
};

}  // namespace mlps::kernel_bench
