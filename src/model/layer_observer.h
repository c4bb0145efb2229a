#pragma once
// Hooks a scheme hangs on the model's passes, per unit (embed, each block, classifier): where a
// data-parallel scheme starts a gradient bucket's all-reduce, and where a fully sharded one
// gathers a unit's parameters before use and frees them after.
#include <vector>

#include "src/model/parameter.h"

namespace mlps {

template <typename T>
class LayerObserver {
 public:
  using Params = std::vector<Parameter<T>*>;
  virtual ~LayerObserver() = default;
  virtual void before_forward(int /*unit*/, const Params& /*params*/) {}
  virtual void after_forward(int /*unit*/, const Params& /*params*/) {}
  virtual void before_backward(int /*unit*/, const Params& /*params*/) {}
  // The unit's parameter gradients are complete.
  virtual void after_backward(int /*unit*/, const Params& /*params*/) {}
};

}  // namespace mlps
