// Merged strided layouts shared by the CPU loops and the CUDA kernels: N operands of one shape,
// size-1 dims dropped, and neighbouring dims merged wherever every operand is contiguous across
// them, so a dense tensor becomes a single dim.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace relpos {

template <size_t N>
struct StridedLayout {
  Shape shape;                       // merged dims (at least one)
  std::array<Shape, N> strides;      // per operand, per merged dim, in elements
  std::array<char*, N> base;         // per operand, address of element [0, ..., 0]
  std::array<int64_t, N> elem_size;  // per operand, bytes per element
};

// Builds the merged layout of `ops` (all of shape `shape`, already expanded).
template <size_t N>
StridedLayout<N> make_layout(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  StridedLayout<N> L;
  for (size_t k = 0; k < N; ++k) {
    L.base[k] = static_cast<char*>(ops[k]->raw_data());
    L.elem_size[k] = static_cast<int64_t>(dtype_size(ops[k]->dtype()));
  }
  // Drop size-1 dims, then merge dim i into i+1 when every operand is contiguous across them.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool can_merge = [&] {
      if (L.shape.empty()) return false;
      for (size_t k = 0; k < N; ++k)
        if (L.strides[k].back() != ops[k]->strides()[d] * shape[d]) return false;
      return true;
    }();
    if (can_merge) {
      L.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) L.strides[k].back() = ops[k]->strides()[d];
    } else {
      L.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) L.strides[k].push_back(ops[k]->strides()[d]);
    }
  }
  if (L.shape.empty()) {
    L.shape.push_back(shape_numel(shape) == 0 ? 0 : 1);
    for (size_t k = 0; k < N; ++k) L.strides[k].push_back(1);
  }
  return L;
}

}  // namespace relpos
