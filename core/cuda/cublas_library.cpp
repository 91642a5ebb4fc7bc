// The loader of core/cuda/cublas_library.h: dlopen once, then dlsym of each entry point.
#include "core/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "core/error.h"

namespace relpos::cuda {

namespace {

const std::string& library_name() {
  static const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

// The entry point `symbol` of `library` as a pointer of `Function`'s type.
template <typename Function>
void resolve(void* library, const char* symbol, Function& out) {
  void* const address = dlsym(library, symbol);
  if (address == nullptr)
    fail("cuda", "{} has no {} ({}): relpos was built against cuBLAS {}", library_name(), symbol,
         dlerror(), CUBLAS_VER_MAJOR);
  out = reinterpret_cast<Function>(address);
}

CublasLibrary load() {
  // Kept open until exit: the handles' destructors run at exit too.
  void* const library = dlopen(library_name().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    fail("cuda",
         "cannot load cuBLAS ({}), which CUDA devices need: {}; install the CUDA "
         "toolkit's libraries or put them on LD_LIBRARY_PATH",
         library_name(), dlerror());
  CublasLibrary l{};
  resolve(library, "cublasCreate_v2", l.create);
  resolve(library, "cublasDestroy_v2", l.destroy);
  resolve(library, "cublasSetStream_v2", l.set_stream);
  resolve(library, "cublasSetMathMode", l.set_math_mode);
  resolve(library, "cublasSgemmStridedBatched", l.sgemm_strided_batched);
  resolve(library, "cublasDgemmStridedBatched", l.dgemm_strided_batched);
  resolve(library, "cublasGemmStridedBatchedEx", l.gemm_strided_batched_ex);
#if CUBLAS_VERSION >= 11600
  resolve(library, "cublasGetStatusString", l.status_string);
#endif
  return l;
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace relpos::cuda
