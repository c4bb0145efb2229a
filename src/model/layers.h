#pragma once
// What a scheme plugs into FC_Net (src/model/fc_net.h): its Linear and its LayerNorm on this
// rank's share of the activations, made by name from a LayerSet, the scheme's table of layer
// kinds (serial, column/row-parallel, SUMMA, 3D). Widths are per row on this rank; the layers
// do their own communication. Gradients are overwritten, or added when `accumulate` (schemes
// that never accumulate ignore it).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"

namespace mlps {

template <typename T>
class Linear {
 public:
  virtual ~Linear() = default;
  virtual int64_t in_width() const = 0;
  virtual int64_t out_width() const = 0;
  // y = x·Wᵀ + b. backward_next: activation checkpointing's recompute of a block's last Linear,
  // whose backward follows at once (a layer may keep what it gathered for it).
  virtual void forward(const T* x, T* y, int64_t rows, bool backward_next) = 0;
  // dW, db and, unless dx is null (the embed), dx = dy·W.
  virtual void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) = 0;
  // The same backward in two halves (the zero-bubble pipeline schedules): dx alone (nothing
  // when dx is null), then dW and db; only layers that need no communication offer them.
  virtual void backward_input(const T* /*dy*/, T* /*dx*/, int64_t /*rows*/) {
    throw std::logic_error("this Linear has no split backward");
  }
  virtual void backward_weight(const T* /*x*/, const T* /*dy*/, int64_t /*rows*/,
                               bool /*accumulate*/) {
    throw std::logic_error("this Linear has no split backward");
  }
};

template <typename T>
class LayerNorm {
 public:
  virtual ~LayerNorm() = default;
  virtual int64_t width() const = 0;
  // Per row of its input (the width of its output unless it gathers rows, as under sequence
  // parallelism).
  virtual int64_t in_width() const { return width(); }
  // y = LayerNorm(x); the row statistics go to mean and rstd [rows] (fp32 for 16-bit T).
  virtual void forward(const T* x, T* y, Acc<T>* mean, Acc<T>* rstd, int64_t rows) = 0;
  // dx from dy and the forward's x and statistics; dγ, dβ.
  virtual void backward(const T* x, const T* dy, T* dx, const Acc<T>* mean, const Acc<T>* rstd,
                        int64_t rows, bool accumulate) = 0;
};

template <typename T>
class LayerSet {
 public:
  virtual ~LayerSet() = default;
  // Called in FC_Net's order with its names: "embed", then per block "block<l>.norm",
  // "block<l>.fc1", "block<l>.fc2" (plain blocks: "block<l>.fc"), then "classifier".
  virtual std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) = 0;
  virtual std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) = 0;
  // The layers of unit `unit` (0 embed, 1..L blocks, L+1 classifier) are all made.
  virtual void unit_made(int /*unit*/) {}
};

// Hooks a scheme hangs on FC_Net's passes, per unit.
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(int /*unit*/) {}
  virtual void after_forward(int /*unit*/) {}
  virtual void before_backward(int /*unit*/) {}
  // The unit's parameter gradients are complete (as far as the layers make them).
  virtual void after_backward(int /*unit*/) {}
};

}  // namespace mlps
