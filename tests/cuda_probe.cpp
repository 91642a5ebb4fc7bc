// relpos_cuda_probe: exits 0 when a CUDA device is visible to relpos and 77 (ctest: "Skipped")
// otherwise, so that a run without a GPU shows in ctest's summary that the CUDA cases of the
// suites were skipped.
#include <cstdio>

#include "core/backend.h"

int main() {
  if (!relpos::cuda_available()) {
    std::printf("no CUDA device (or relpos built without CUDA): the CUDA cases were SKIPPED\n");
    return 77;
  }
  std::printf("%d CUDA device(s): the CUDA cases ran\n", relpos::cuda::device_count());
  return 0;
}
