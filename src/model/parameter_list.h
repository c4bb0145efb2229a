#pragma once
// Owns a model's parameters in creation order; creation order defines the tensor ids that
// key the initialiser, so every scheme that builds the same model gets the same ids.
#include <memory>
#include <vector>

#include "src/model/parameter.h"

namespace mlps {

template <typename T>
class ParameterList {
 public:
  ParameterList(Device& device, ParameterStorage storage)
      : device_(device), storage_(storage) {}
  Parameter<T>& add(const std::string& name, int64_t rows, int64_t cols, InitKind init,
                    int64_t fan_in) {
    const auto id = static_cast<int64_t>(params_.size());
    params_.push_back(
        std::make_unique<Parameter<T>>(device_, name, id, rows, cols, init, fan_in, storage_));
    return *params_.back();
  }
  // Uploads every parameter's initial value and zeroes its gradient (whole tensors, wherever
  // value and grad point). The values are computed once, at the accumulator's width, and
  // stored rounded to T; on_wide(parameter, values) sees each tensor's wide values (where typed
  // storage's fp32 master starts).
  template <typename OnWide>
  void initialise(uint64_t seed, OnWide on_wide) {
    for (auto& p : params_) {
      std::vector<Acc<T>> wide(static_cast<size_t>(p->size()));
      fill_initial_shard(wide.data(), p->cols, seed, p->tensor_id, p->init, p->fan_in, 0, p->rows,
                         0, p->cols);
      p->value.upload(stored_from<T>(wide));
      p->grad.zero();
      on_wide(*p, wide);
    }
  }
  void initialise(uint64_t seed) {
    initialise(seed, [](const Parameter<T>&, const std::vector<Acc<T>>&) {});
  }
  int64_t element_count() const {
    int64_t n = 0;
    for (const auto& p : params_) n += p->size();
    return n;
  }
  auto begin() { return params_.begin(); }
  auto end() { return params_.end(); }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }
  size_t size() const { return params_.size(); }
  Parameter<T>& operator[](size_t i) { return *params_[i]; }

 private:
  Device& device_;
  ParameterStorage storage_;
  std::vector<std::unique_ptr<Parameter<T>>> params_;
};

}  // namespace mlps
