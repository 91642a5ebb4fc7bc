// Launchers of the reduction kernels (reduce_kernels.cu): sum, max, logsumexp and argmax of a
// contiguous x viewed as [O, R, I] over R, and the all-finite check. Host glue: reduce.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"
#include "core/functors.h"

namespace relpos::cuda {

// How x: [O, R, I] (contiguous) is reduced over R into out: [O, I]. I == 1 runs one warp or
// block per row; I > 1 runs 32-column tiles with 8 row lanes each. When there are too few outputs
// to fill the GPU, each output's R is split into `splits` chunks whose partial accumulators (in
// caller-allocated scratch of `scratch_bytes`) are merged by a second pass in a fixed order.
struct ReducePlan {
  int64_t O = 1, R = 1, I = 1;
  int64_t splits = 1;         // chunks per output
  int64_t chunk = 1;          // reduced elements per chunk
  int64_t scratch_bytes = 0;  // 0 when splits == 1
};
ReducePlan plan_reduce(int64_t O, int64_t R, int64_t I);

// out: [O, I] of the op's output dtype (sum of an integer dtype: i64; otherwise `dtype`).
// logsumexp runs max then the shifted sum of exp, reading the max back from out.
cudaError_t launch_reduce(ReduceOp op, DType dtype, const ReducePlan& plan, const void* x,
                          void* out, void* scratch, cudaStream_t stream);
// out: [O, I] i64, the index in R of the first maximum (the first NaN, if any).
cudaError_t launch_argmax(DType dtype, const ReducePlan& plan, const void* x, int64_t* out,
                          void* scratch, cudaStream_t stream);
// x: [n] contiguous floating. Sets *flag (an int the caller zeroed) to 1 if any element is NaN or
// infinite.
cudaError_t launch_find_nonfinite(DType dtype, const void* x, int64_t n, int* flag,
                                  cudaStream_t stream);

}  // namespace relpos::cuda
