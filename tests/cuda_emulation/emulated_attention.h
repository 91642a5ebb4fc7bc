// The CUDA attention kernels (core/cuda/attention_launches.cuh) run by the emulator, through the
// dispatch and launch order a GPU sees, for one element type S each: double, float or bf16. Each
// type's kernels are instantiated in a source of their own (emulated_attention_<type>.cpp), so
// the three compile side by side; under ASan the one source that held them all took 223 s of
// CPU and compiled alone at the end of a fresh build.
#pragma once

#include "core/cuda/attention_kernels.h"

namespace relpos::cuda_emulation {

// The forward kernel: out [B, H, Lq, Dv] in S, lse [B, H, Lq] in S's compute type.
template <typename S>
cudaError_t attention_forward(const cuda::AttentionArgs& a, const void* q, const void* k,
                              const void* v, void* out, void* lse);

// The backward kernels into `grads` (core/cuda/attention_kernels.h), from lse and row_dot
// (rowsum(gout * out)) in S's compute type.
template <typename S>
cudaError_t attention_backward(const cuda::AttentionArgs& a, const void* q, const void* k,
                               const void* v, const void* gout, const void* lse,
                               const void* row_dot, const cuda::AttentionGradBuffers& grads);

}  // namespace relpos::cuda_emulation
