# Multi-process training (DESIGN §12): RELPOS_MPI=AUTO builds core/comm on OpenMPI when it is
# found (Debian: libopenmpi-dev, openmpi-bin), ON requires it, OFF builds one process only. With
# the CUDA backend too, NCCL (shipped with the CUDA toolkit) carries the all-reduce of CUDA
# tensors when its library and header are found (NCCL_ROOT hints an unusual layout).
set(RELPOS_WITH_MPI OFF)
set(RELPOS_WITH_NCCL OFF)
if(RELPOS_MPI STREQUAL "OFF")
  message(STATUS "relpos: MPI off (RELPOS_MPI=OFF): one process per run")
  return()
endif()
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  if(RELPOS_MPI STREQUAL "ON")
    message(FATAL_ERROR "relpos: RELPOS_MPI=ON but MPI was not found (Debian: libopenmpi-dev)")
  endif()
  message(STATUS "relpos: MPI not found (Debian: libopenmpi-dev): one process per run")
  return()
endif()
set(RELPOS_WITH_MPI ON)
message(STATUS "relpos: MPI on (${MPI_C_LIBRARIES})")

if(RELPOS_WITH_CUDA)
  set(_relpos_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
                         ${CUDAToolkit_TARGET_DIR})
  find_library(NCCL_LIBRARY nccl HINTS ${_relpos_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_relpos_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    set(RELPOS_WITH_NCCL ON)
    message(STATUS "relpos: NCCL on (${NCCL_LIBRARY}) for the all-reduce of CUDA tensors")
  else()
    message(STATUS "relpos: NCCL not found (set NCCL_ROOT): CUDA tensors are reduced through "
                   "host copies over MPI")
  endif()
endif()
