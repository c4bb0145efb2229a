#pragma once
// Adam or SGD over a set of tensors (whole parameters for serial training; shards of them for
// sharded schemes). Each tensor registered once; step() updates every one from its gradient.
#include <string>
#include <vector>

#include "src/buffer.h"

namespace mlps {

enum class OptimizerKind { adam, sgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

template <typename T>
class Optimizer {
 public:
  Optimizer(Device& device, const OptimizerConfig& config) : device_(device), config_(config) {}

  // Registers `count` elements at value/grad (device memory that outlives the optimizer).
  void add(T* value, const T* grad, int64_t count);
  void step();
  int64_t steps_taken() const { return steps_; }
  // Bytes the update reads and writes per step (each operand once), for the step-time floor.
  double bytes_per_step() const;

 private:
  struct Slot {
    T* value;
    const T* grad;
    int64_t count;
    Buffer<T> m, v;  // Adam moments (empty for SGD)
  };
  Device& device_;
  OptimizerConfig config_;
  std::vector<Slot> slots_;
  int64_t steps_ = 0;
};

}  // namespace mlps
