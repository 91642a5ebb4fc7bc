// Backend kernel declarations. relpos::cpu is always built; relpos::cuda is built with
// RELPOS_CUDA, and otherwise core/cuda/no_cuda.cpp defines each kernel as one line that throws.
#pragma once

#include <cstdint>
#include <vector>

#include "core/allocator.h"
#include "core/functors.h"
#include "core/tensor.h"

namespace relpos {
struct AttentionSpec;     // core/ops.h
struct AttentionGrads;    // core/ops.h
struct AdamCoefficients;  // core/ops.h
struct AdamUpdate;        // core/ops.h
}  // namespace relpos

namespace relpos::cpu {
MemoryCounter& memory_counter();
void* allocate(size_t nbytes);
void deallocate(void* ptr, size_t nbytes);
size_t cached_bytes();  // freed large buffers the allocator keeps for reuse
void empty_cache();     // returns them to the system
#include "core/backend_kernels.inc"
}  // namespace relpos::cpu

namespace relpos::cuda {
MemoryCounter& memory_counter(Device device);
void* allocate(size_t nbytes, Device device);
void deallocate(void* ptr, size_t nbytes, Device device);
int device_count();
void synchronize(Device device);
size_t cached_bytes(Device device);  // freed blocks the caching allocator keeps
void empty_cache(Device device);     // returns them to the driver
// Host <-> device transfers (both contiguous, same shape and dtype).
void copy_to_host(const Tensor& src, const Tensor& dst);
void copy_from_host(const Tensor& src, const Tensor& dst);
#include "core/backend_kernels.inc"
}  // namespace relpos::cuda
