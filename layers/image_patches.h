// Overlapping image patches as tokens (a strided convolution's receptive fields, the "early
// convolution" stem of Xiao et al. 2021): a side x side image of 8-bit pixels becomes a
// (side / stride)^2 grid of tokens, token (i, j) holding the size x size pixels whose top-left
// corner is (i * stride - pad, j * stride - pad), pad = ceil((size - stride) / 2), zero outside
// the image. size 3, stride 2 on 28 x 28: 14 x 14 tokens of 9 pixels each.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace relpos {

struct PatchGeometry {
  int64_t side = 0;    // the image is side x side pixels, row-major
  int64_t size = 3;    // each patch is size x size pixels
  int64_t stride = 2;  // between neighbouring patches; side must be a multiple of it

  int64_t grid() const { return stride > 0 ? side / stride : 0; }  // patches per row, column
  int64_t pad() const { return (size - stride + 1) / 2; }
  int64_t tokens() const { return grid() * grid(); }  // patches per image
};

// The side of a square image of `pixels` pixels, or 0 when `pixels` is not a square.
int64_t square_side(int64_t pixels);

// values [B, side * side] (any float dtype, on any device) -> [B, tokens, size * size], patch
// (i, j) at token i * grid + j, its pixels row-major.
Tensor image_patches(const Tensor& values, const PatchGeometry& geometry);

}  // namespace relpos
