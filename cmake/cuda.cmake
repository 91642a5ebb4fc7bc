# The CUDA backend switch. RELPOS_CUDA=AUTO builds it when nvcc, the CUDA toolkit libraries and
# cuDNN are all found; ON requires them; OFF links core/cuda/no_cuda.cpp instead.
# Hints for unusual layouts: -DCUDAToolkit_ROOT=..., -DCUDNN_ROOT=... (or the CUDNN_ROOT
# environment variable).
set(RELPOS_WITH_CUDA OFF)
if(RELPOS_CUDA STREQUAL "OFF")
  message(STATUS "relpos: CUDA backend off (RELPOS_CUDA=OFF)")
  return()
endif()

include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
find_package(CUDAToolkit QUIET)
set(_relpos_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT})
if(CUDAToolkit_FOUND)
  list(APPEND _relpos_cudnn_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
endif()
find_library(CUDNN_LIBRARY cudnn HINTS ${_relpos_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64 lib/x64)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${_relpos_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include)

set(_relpos_missing "")
if(NOT CMAKE_CUDA_COMPILER)
  list(APPEND _relpos_missing "nvcc")
endif()
if(NOT CUDAToolkit_FOUND)
  list(APPEND _relpos_missing "CUDA toolkit libraries")
endif()
if(NOT CUDNN_LIBRARY OR NOT CUDNN_INCLUDE_DIR)
  list(APPEND _relpos_missing "cuDNN (set CUDNN_ROOT)")
endif()

if(_relpos_missing)
  if(RELPOS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "relpos: RELPOS_CUDA=ON but not found: ${_relpos_missing}")
  endif()
  message(STATUS "relpos: CUDA backend off (not found: ${_relpos_missing})")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)  # sm_90 code for H100/H200 plus compute_90 PTX for newer GPUs
endif()
enable_language(CUDA)
# CMake 3.25 does not know nvcc's C++20 flag (nvcc 12+ has it): tell it.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(RELPOS_WITH_CUDA ON)
message(STATUS "relpos: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
               "arch ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${CUDNN_LIBRARY})")
