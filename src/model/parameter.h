#pragma once
// A trainable tensor of the model: its value and gradient on the device, and the identity
// (name, tensor id, global shape) that the counter-based initialiser and the optimizer key on.
// Typed mixed precision (T = bf16 or fp16) keeps the gradient in fp32 (Acc<T>), as Megatron's
// --bf16 accumulates it; the fp32 master copy is the optimizer's.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/stored_values.h"
#include "src/device/buffer.h"

namespace mlps {

enum class InitKind {
  uniform_fan_in,  // U(−1/√fan_in, 1/√fan_in), PyTorch's default for Linear weight and bias
  ones,            // LayerNorm γ
  zeros,           // LayerNorm β
};

// owned: each parameter allocates its value and gradient. external: none are allocated; the
// scheme points value and grad at views of its own (flat, bucketed or gathered) storage.
enum class ParameterStorage { owned, external };

template <typename T>
struct Parameter {
  std::string name;
  int64_t tensor_id = 0;
  int64_t rows = 0;  // global shape: rows × cols (a bias is 1 × out)
  int64_t cols = 0;
  InitKind init = InitKind::zeros;
  int64_t fan_in = 1;
  Buffer<T> value;
  Buffer<Acc<T>> grad;

  Parameter(Device& device, std::string name_, int64_t id, int64_t rows_, int64_t cols_,
            InitKind init_, int64_t fan_in_, ParameterStorage storage)
      : name(std::move(name_)), tensor_id(id), rows(rows_), cols(cols_), init(init_),
        fan_in(fan_in_) {
    if (storage == ParameterStorage::owned) {
      value = Buffer<T>(device, rows_ * cols_);
      grad = Buffer<Acc<T>>(device, rows_ * cols_);
    }
  }
  int64_t size() const { return rows * cols; }
};

// The initial value of element (row, col) of a tensor: the same on every rank and in every
// scheme, whatever shard of the tensor a rank holds.
double initial_value(uint64_t seed, int64_t tensor_id, InitKind init, int64_t fan_in,
                     int64_t row, int64_t col);

// The initial values of elements [first, first + count) of a tensor flattened row-major, as V
// (T, or the float master of a 16-bit T). 16-bit values are the fp32 ones rounded.
template <typename V, typename T>
void fill_initial_range(V* host, uint64_t seed, const Parameter<T>& param, int64_t first,
                        int64_t count);

// Initial values computed at the accumulator's width, as the values of storage type T: the
// same for float and double, rounded once for 16-bit T (whose fp32 master starts from `wide`).
template <typename T>
std::vector<T> stored_from(const std::vector<Acc<T>>& wide) {
  if constexpr (std::is_same_v<T, Acc<T>>) {
    return wide;
  } else {
    std::vector<T> stored(wide.size());
    std::transform(wide.begin(), wide.end(), stored.begin(), [](Acc<T> v) { return narrow<T>(v); });
    return stored;
  }
}

// Fills host memory with rows [row0, row0+rows) × cols [col0, col0+cols) of a tensor,
// row-major with leading dimension ld.
template <typename T>
void fill_initial_shard(T* host, int64_t ld, uint64_t seed, int64_t tensor_id, InitKind init,
                        int64_t fan_in, int64_t row0, int64_t rows, int64_t col0, int64_t cols);

}  // namespace mlps
