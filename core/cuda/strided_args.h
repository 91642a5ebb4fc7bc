// Host side: StridedArgs for tensors of one shape (the first is the output), merged by the same
// rule as the CPU loops.
#pragma once

#include <array>

#include "core/cuda/kernel_args.h"
#include "core/layout.h"

namespace relpos::cuda {

template <int N>
StridedArgs<N> strided_args(const char* op, const std::array<const Tensor*, N>& ops) {
  const StridedLayout<N> L = make_layout<N>(ops[0]->shape(), ops);
  RELPOS_CHECK(L.shape.size() <= static_cast<size_t>(kMaxMergedDims), op,
               "{} dims remain after merging (at most {} on CUDA); make an operand contiguous",
               L.shape.size(), kMaxMergedDims);
  StridedArgs<N> a;
  a.n = ops[0]->numel();
  a.ndim = static_cast<int>(L.shape.size());
  a.dense = a.ndim == 1;
  for (int d = 0; d < a.ndim; ++d) {
    a.sizes[d] = L.shape[d];
    for (int k = 0; k < N; ++k) {
      a.strides[k][d] = L.strides[k][d];
      a.dense = a.dense && L.strides[k][d] == 1;
    }
  }
  for (int k = 0; k < N; ++k) a.data[k] = L.base[k];
  return a;
}

}  // namespace relpos::cuda
