#pragma once
// The W half of a backward split into B and W (the zero-bubble pipeline schedules): during B
// each Linear computes only dx and leaves here what its dW and db need, its output gradient dy
// (copied: B's gradient buffers are reused) and its input x (copied when its buffer is reused
// before W: activation checkpointing's shared recompute set). run() is W. The copies' buffers
// come from a pool and go back to it after W, so a steady-state step allocates none.
#include <vector>

#include "src/device/buffer_pool.h"
#include "src/model/layers.h"

namespace mlps {

template <typename T>
class DeferredWeightGrads {
 public:
  explicit DeferredWeightGrads(BufferPool<T>& pool) : pool_(&pool) {}
  void record(Device& device, Linear<T>& linear, const T* x, bool copy_x, const T* dy,
              int64_t rows) {
    Job job{&linear, x, pool_->take(rows * linear.out_width()), {}, rows};
    device.copy(job.dy.data(), dy, job.dy.bytes());
    if (copy_x) {
      job.x_copy = pool_->take(rows * linear.in_width());
      device.copy(job.x_copy.data(), x, job.x_copy.bytes());
      job.x = job.x_copy.data();
    }
    jobs_.push_back(std::move(job));
  }
  // Every recorded Linear's dW and db, in the order of record; then empty.
  void run(bool accumulate) {
    for (Job& job : jobs_) {
      job.linear->backward_weight(job.x, job.dy.data(), job.rows, accumulate);
      pool_->give(std::move(job.dy));
      pool_->give(std::move(job.x_copy));
    }
    jobs_.clear();
  }
  size_t bytes() const {
    size_t total = 0;
    for (const Job& job : jobs_) total += job.dy.bytes() + job.x_copy.bytes();
    return total;
  }

 private:
  struct Job {
    Linear<T>* linear;
    const T* x;
    Buffer<T> dy, x_copy;
    int64_t rows;
  };
  BufferPool<T>* pool_;
  std::vector<Job> jobs_;
};

// A Linear's backward: whole, or with `deferred` its dx now and its dW, db recorded there.
template <typename T>
void linear_backward(Device& device, Linear<T>& linear, const T* x, const T* dy, T* dx,
                     int64_t rows, bool accumulate, DeferredWeightGrads<T>* deferred,
                     bool copy_x) {
  if (!deferred) return linear.backward(x, dy, dx, rows, accumulate);
  deferred->record(device, linear, x, copy_x, dy, rows);
  linear.backward_input(dy, dx, rows);
}

}  // namespace mlps
