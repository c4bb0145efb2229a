#include "src/data/image_resize.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace mlps {
namespace {

// One output coordinate's two source neighbours and their weights along one axis.
struct Tap {
  int lo;
  int hi;
  float w_lo;
  float w_hi;
};

// PyTorch's area_pixel_compute_source_index plus compute_indices_weights_linear.
std::vector<Tap> linear_taps(int src_size, int dst_size) {
  const float scale = static_cast<float>(src_size) / static_cast<float>(dst_size);
  std::vector<Tap> taps(static_cast<size_t>(dst_size));
  for (int d = 0; d < dst_size; ++d) {
    const float s = std::max(scale * (static_cast<float>(d) + 0.5f) - 0.5f, 0.0f);
    const int lo = std::min(static_cast<int>(s), src_size - 1);
    const int hi = lo < src_size - 1 ? lo + 1 : lo;
    const float w_hi = std::clamp(s - static_cast<float>(lo), 0.0f, 1.0f);
    taps[static_cast<size_t>(d)] = {lo, hi, 1.0f - w_hi, w_hi};
  }
  return taps;
}

}  // namespace

void resize_bilinear(const float* src, int src_h, int src_w, float* dst, int dst_h, int dst_w) {
  if (src_h <= 0 || src_w <= 0 || dst_h <= 0 || dst_w <= 0)
    throw std::invalid_argument("resize_bilinear: image sizes must be positive");
  if (src_h == dst_h && src_w == dst_w) {
    std::copy(src, src + static_cast<size_t>(src_h) * static_cast<size_t>(src_w), dst);
    return;
  }
  const std::vector<Tap> rows = linear_taps(src_h, dst_h);
  const std::vector<Tap> cols = linear_taps(src_w, dst_w);
  for (int y = 0; y < dst_h; ++y) {
    const Tap& r = rows[static_cast<size_t>(y)];
    const float* top = src + static_cast<size_t>(r.lo) * static_cast<size_t>(src_w);
    const float* bottom = src + static_cast<size_t>(r.hi) * static_cast<size_t>(src_w);
    float* out = dst + static_cast<size_t>(y) * static_cast<size_t>(dst_w);
    for (int x = 0; x < dst_w; ++x) {
      const Tap& c = cols[static_cast<size_t>(x)];
      // Height outermost, as PyTorch's CPU kernel nests the two axes.
      out[x] = r.w_lo * (c.w_lo * top[c.lo] + c.w_hi * top[c.hi]) +
               r.w_hi * (c.w_lo * bottom[c.lo] + c.w_hi * bottom[c.hi]);
    }
  }
}

}  // namespace mlps
