#include "src/model/parameter.h"

#include <cmath>

#include "kernels/stored_values.h"
#include "src/base/counter_hash.h"

namespace mlps {

double initial_value(uint64_t seed, int64_t tensor_id, InitKind init, int64_t fan_in,
                     int64_t row, int64_t col) {
  switch (init) {
    case InitKind::ones: return 1.0;
    case InitKind::zeros: return 0.0;
    case InitKind::uniform_fan_in: break;
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  const uint64_t h = hash_combine(
      hash_combine(hash_combine(seed, static_cast<uint64_t>(tensor_id)), static_cast<uint64_t>(row)),
      static_cast<uint64_t>(col));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  return (2.0 * unit - 1.0) * bound;
}

template <typename T>
void fill_initial_shard(T* host, int64_t ld, uint64_t seed, int64_t tensor_id, InitKind init,
                        int64_t fan_in, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      host[r * ld + c] =
          narrow<T>(initial_value(seed, tensor_id, init, fan_in, row0 + r, col0 + c));
}

template <typename V, typename T>
void fill_initial_range(V* host, uint64_t seed, const Parameter<T>& p, int64_t first,
                        int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t flat = first + i;
    host[i] = narrow<V>(
        initial_value(seed, p.tensor_id, p.init, p.fan_in, flat / p.cols, flat % p.cols));
  }
}

template void fill_initial_range(float*, uint64_t, const Parameter<float>&, int64_t, int64_t);
template void fill_initial_range(double*, uint64_t, const Parameter<double>&, int64_t, int64_t);
template void fill_initial_range(float*, uint64_t, const Parameter<bf16>&, int64_t, int64_t);
template void fill_initial_range(float*, uint64_t, const Parameter<fp16>&, int64_t, int64_t);
template void fill_initial_shard<float>(float*, int64_t, uint64_t, int64_t, InitKind, int64_t,
                                        int64_t, int64_t, int64_t, int64_t);
template void fill_initial_shard<double>(double*, int64_t, uint64_t, int64_t, InitKind, int64_t,
                                         int64_t, int64_t, int64_t, int64_t);
template void fill_initial_shard<bf16>(bf16*, int64_t, uint64_t, int64_t, InitKind, int64_t,
                                       int64_t, int64_t, int64_t, int64_t);
template void fill_initial_shard<fp16>(fp16*, int64_t, uint64_t, int64_t, InitKind, int64_t,
                                       int64_t, int64_t, int64_t, int64_t);

}  // namespace mlps
