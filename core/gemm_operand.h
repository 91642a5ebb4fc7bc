// How a [B, r, c] operand reaches a GEMM library (OpenBLAS or cuBLAS) without a copy: row-major
// with a leading dimension, or column-major (a transposed row-major view, passed with the
// transpose flag flipped). Only a matrix with no unit inner stride is copied. Shared by both
// backends, so they copy exactly the same operands. The CPU also takes [B1, B2, r, c] operands
// whose two batch dims have strides of their own (heads split from [B, L, H·D]).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/tensor.h"

namespace relpos {

struct GemmOperand {
  Tensor data;  // the matrices: x itself, or a dense copy
  bool col_major = false;
  int64_t ld = 0;            // leading dimension
  int64_t batch_stride = 0;  // 0 when the batch is broadcast
  // [B1, B2, r, c]: matrix i is at (i / B2) outer_stride + (i % B2) batch_stride.
  int64_t inner_batch = 1, outer_stride = 0;

  int64_t offset(int64_t i) const {
    return i / inner_batch * outer_stride + i % inner_batch * batch_stride;
  }
};

// Leading dimension of an r x c matrix with strides (sr, sc) read as row-major, or -1 when it
// is not row-major with a leading dimension the libraries accept (>= c, within int range).
inline int64_t row_major_ld(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  if (c > 1 && sc != 1) return -1;
  const int64_t min_ld = std::max<int64_t>(c, 1);
  const int64_t ld = r > 1 ? sr : min_ld;  // one row: any ld >= c will do
  return ld >= min_ld && ld <= INT_MAX ? ld : -1;
}

// x: [B, r, c] or [B1, B2, r, c].
inline GemmOperand gemm_operand(const Tensor& x) {
  const bool two_levels = x.dim() == 4;
  const int64_t r = x.size(-2), c = x.size(-1), inner = x.size(-3);
  const int64_t batch_stride = inner > 1 ? x.stride(-3) : 0;
  const int64_t inner_batch = std::max<int64_t>(1, inner);
  const int64_t outer_stride = two_levels && x.size(0) > 1 ? x.stride(0) : 0;
  if (const int64_t ld = row_major_ld(r, c, x.stride(-2), x.stride(-1)); ld > 0)
    return {x, false, ld, batch_stride, inner_batch, outer_stride};
  if (const int64_t ld = row_major_ld(c, r, x.stride(-1), x.stride(-2)); ld > 0)
    return {x, true, ld, batch_stride, inner_batch, outer_stride};
  // Neither inner stride is 1: copy, a single matrix when the batch is broadcast.
  const int64_t dense_ld = std::max<int64_t>(c, 1);
  if (batch_stride == 0 && outer_stride == 0) {
    const Tensor first = two_levels ? x.select(0, 0).select(0, 0) : x.select(0, 0);  // [r, c]
    return {first.contiguous().unsqueeze(0), false, dense_ld, 0};
  }
  return {x.contiguous(), false, dense_ld, r * c, inner_batch, two_levels ? inner * r * c : 0};
}

}  // namespace relpos
