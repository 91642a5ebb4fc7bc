// What the MPI backend of core/comm shares with the ways it moves CUDA tensors: NCCL
// (comm_nccl.cpp) or host copies over MPI (comm_cuda_host.cpp).
#pragma once

#include <mpi.h>

#include <string>

#include "core/tensor.h"

namespace relpos::comm::detail {

// The MPI datatype of a dtype relpos reduces (f32, f64, i64); an error for others.
MPI_Datatype mpi_type(DType dtype);

// MPI collectives on a contiguous CPU tensor (counts above INT_MAX in pieces).
void mpi_all_reduce_sum(Tensor& t);
void mpi_broadcast(Tensor& t, int root);

// A contiguous CUDA tensor copied to the host, reduced or broadcast over MPI, copied back: the
// transport of builds without NCCL, and of jobs whose ranks share a GPU (NCCL refuses those).
void host_copy_all_reduce_sum(Tensor& t);
void host_copy_broadcast(Tensor& t, int root);

// The same for a contiguous CUDA tensor, and what carries them ("NCCL 2.x", "host copies").
std::string cuda_transport();
void cuda_all_reduce_sum(Tensor& t);
void cuda_broadcast(Tensor& t, int root);

}  // namespace relpos::comm::detail
