// The emulator itself (emulator.h): what the kernels' tests rely on it to show. A missing barrier
// makes a thread read stale shared memory, threads that never meet at a barrier are an error and
// not a hang, a thread's exception is the launch's, and a warp's shuffles and exchanges deliver
// each call's own values however many follow each other without a barrier between.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "emulator.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

alignas(16) unsigned char shared[4096];

float* shared_floats() {
  return reinterpret_cast<float*>(shared);
}

// Each thread writes its slot, then reads its neighbour's (thread t + 1, wrapping), with or
// without a barrier between; returns how many of the reads, over `blocks` blocks, saw the value.
int neighbour_reads_that_see_the_write(bool barrier, unsigned blocks, unsigned threads) {
  int seen = 0;
  cuda_emulation::launch(dim3(blocks), threads, shared, threads * sizeof(float), [&] {
    const unsigned t = threadIdx.x, next = (t + 1) % blockDim.x;
    shared_floats()[t] = static_cast<float>(blockIdx.x * 1000 + t);
    if (barrier) __syncthreads();
    if (shared_floats()[next] == static_cast<float>(blockIdx.x * 1000 + next)) ++seen;
  });
  return seen;
}

}  // namespace

TEST_CASE("the emulator: a read of another thread's write sees it after a barrier, not before") {
  // 2 blocks (one takes its warps from the first, one from the last) of 96 threads (3 warps).
  CHECK(neighbour_reads_that_see_the_write(true, 2, 96) == 2 * 96);
  CHECK(neighbour_reads_that_see_the_write(false, 2, 96) < 2 * 96);
  // Within a single warp too: its threads run in turn up to the next barrier.
  CHECK(neighbour_reads_that_see_the_write(false, 2, 32) < 2 * 32);
}

TEST_CASE("the emulator: threads that never meet at a barrier are an error, not a hang") {
  const auto run = [] {
    cuda_emulation::launch(dim3(1), 64, shared, 0, [] {
      if (threadIdx.x != 5) __syncthreads();  // thread 5 ends without it
      __syncthreads();
    });
  };
  CHECK_THROWS_WITH_AS(run(), doctest::Contains("wait for each other forever"), std::runtime_error);
  // More shared memory than a block may have is refused before anything runs.
  CHECK_THROWS_AS(
      cuda_emulation::launch(dim3(1), 32, shared, cuda_emulation::kMaxSharedBytes + 1, [] {}),
      std::runtime_error);
}

TEST_CASE("the emulator: an exception a thread throws comes out of launch; the next launch runs") {
  const auto run = [] {
    cuda_emulation::launch(dim3(2), 64, shared, 0, [] {
      __syncthreads();
      if (blockIdx.x == 1 && threadIdx.x == 40) throw std::runtime_error("thread 40 gives up");
      __syncthreads();  // the other threads wait here for thread 40, forever
    });
  };
  CHECK_THROWS_WITH_AS(run(), "thread 40 gives up", std::runtime_error);
  CHECK(neighbour_reads_that_see_the_write(true, 2, 96) == 2 * 96);
}

TEST_CASE("the emulator: back-to-back shuffles and exchanges deliver each call's own values") {
  constexpr int kCalls = 50, kThreads = 64;
  std::vector<int> wrong(2, 0);
  cuda_emulation::launch(dim3(2), kThreads, shared, 0, [&] {
    const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
    for (int call = 0; call < kCalls; ++call) {
      const int mask = 1 + call % 31;
      const int got = __shfl_xor_sync(0xffffffffu, 1000 * call + t, mask);
      if (got != 1000 * call + 32 * warp + (lane ^ mask)) ++wrong[0];
      const double mine = call + 0.01 * t;
      unsigned char all[32 * cuda_emulation::kSlotBytes];
      cuda_emulation::exchange_in_warp(&mine, sizeof mine, all);
      for (int from = 0; from < 32; ++from) {
        double theirs;
        std::memcpy(&theirs, all + from * cuda_emulation::kSlotBytes, sizeof theirs);
        if (theirs != call + 0.01 * (32 * warp + from)) ++wrong[1];
      }
    }
  });
  CHECK(wrong[0] == 0);
  CHECK(wrong[1] == 0);
}
