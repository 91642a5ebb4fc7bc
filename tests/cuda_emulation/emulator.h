// Runs CUDA kernels compiled as host C++ (cuda_runtime.h here) on the CPU, so their indexing,
// masking and reductions are tested where no GPU is: the blocks of a grid one after another, the
// threads of a block as fibers on one system thread, switched at __syncthreads and at warp-wide
// calls (shuffles, the tensor cores' mma). A warp runs, its threads in turn, until all of them have
// reached the next block barrier, then the next warp (every other block from the last warp and
// thread), so a read of shared memory that another thread writes without a barrier between them
// sees stale bytes, and shared memory starts each block as NaN bytes: a missing barrier or an
// unwritten tile shows in the results.
#pragma once

#include <cstddef>
#include <functional>

#include "cuda_runtime.h"

namespace relpos::cuda_emulation {

constexpr size_t kMaxSharedBytes = size_t{227} << 10;  // an H100's opt-in maximum per block

// Runs kernel() as every thread of every block of grid x threads, with `shared` (the kernels'
// `extern __shared__` array, defined by the caller) as shared memory of shared_bytes. Throws
// std::runtime_error when shared_bytes exceeds kMaxSharedBytes or the threads of a block wait for
// each other forever.
void launch(dim3 grid, unsigned threads, unsigned char* shared, size_t shared_bytes,
            const std::function<void()>& kernel);

}  // namespace relpos::cuda_emulation
