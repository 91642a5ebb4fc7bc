// The doctest main shared by every suite. Prints, once, whether CUDA cases will run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "core/device.h"

int main(int argc, char** argv) {
  if (!relpos::cuda_available())
    std::fprintf(stderr, "[relpos tests] no CUDA device: CUDA cases are SKIPPED\n");
  doctest::Context context(argc, argv);
  return context.run();
}
