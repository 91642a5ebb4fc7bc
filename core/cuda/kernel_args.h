// Plain arguments passed from the host glue (core/cuda/*.cpp, compiled by the C++ compiler) to
// the kernel launchers (core/cuda/*.cu, compiled by nvcc). Kernel sources include no fmt and no
// Tensor: nvcc cannot compile fmt's C++20 headers, and the split keeps nvcc's work small.
#pragma once

#include <cstdint>

namespace relpos::cuda {

constexpr int kMaxMergedDims = 10;

// N operands of one shape after dim merging (core/layout.h): operand 0 is the output.
template <int N>
struct StridedArgs {
  int64_t n = 0;       // elements
  int ndim = 0;        // merged dims
  bool dense = false;  // one merged dim with unit strides for every operand
  int64_t sizes[kMaxMergedDims] = {};
  int64_t strides[N][kMaxMergedDims] = {};  // in elements
  void* data[N] = {};                       // address of element [0, ..., 0]
};

}  // namespace relpos::cuda
