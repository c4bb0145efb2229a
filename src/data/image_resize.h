#pragma once
// Bilinear resize of one single-channel float image, as PyTorch's
// interpolate(mode="bilinear", align_corners=False) and torchvision's Resize compute it:
// half-pixel centres, src = (dst + 0.5) * (src_size / dst_size) - 0.5, clamped at 0 below and
// at the last pixel above. There is no antialias filter, so downscaling differs from
// torchvision's default (antialias=True); upscaling (28 -> 64, the usual case) is the same.
namespace mlps {

// src is src_h x src_w and dst is dst_h x dst_w, both row-major; they must not overlap.
// Equal sizes copy the image unchanged.
void resize_bilinear(const float* src, int src_h, int src_w, float* dst, int dst_h, int dst_w);

}  // namespace mlps
