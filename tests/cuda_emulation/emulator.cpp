// The fiber scheduler of emulator.h: ucontext fibers, round robin; a barrier counts arrivals
// and releases its waiters by bumping a generation, which they check each time they are resumed.
#include "emulator.h"

#include <ucontext.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace relpos::cuda_emulation {

uint3 thread_index, block_index;
dim3 grid_size, block_size;

namespace {

constexpr size_t kStackBytes = size_t{256} << 10;
constexpr int kWarp = 32;

struct Fiber {
  ucontext_t context{};
  std::unique_ptr<char[]> stack;
  uint3 index;
  bool done = false;
};

struct Barrier {
  int arrived = 0;
  unsigned generation = 0;
};

struct Block {
  ucontext_t scheduler{};
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  const std::function<void()>* kernel = nullptr;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::vector<unsigned char> lanes;  // [warps][kWarp][8]: the values a shuffle exchanges
  bool progressed = false;           // since the last round: a barrier opened or a thread ended
};

Block block;

void yield() {
  swapcontext(&block.running->context, &block.scheduler);
}

// Waits until `participants` threads have arrived at b.
void wait_at(Barrier& b, int participants) {
  const unsigned generation = b.generation;
  if (++b.arrived == participants) {
    b.arrived = 0;
    ++b.generation;
    block.progressed = true;
    return;
  }
  while (b.generation == generation) yield();
}

void run_thread() {
  (*block.kernel)();
  block.running->done = true;
  block.progressed = true;
}  // returns to the scheduler (uc_link)

int warp_of_running() {
  return static_cast<int>(thread_index.x) / kWarp;
}

int warp_size_of(int warp) {
  const int threads = static_cast<int>(block.fibers.size());
  return std::min(kWarp, threads - warp * kWarp);
}

}  // namespace

void sync_block() {
  wait_at(block.block_barrier, static_cast<int>(block.fibers.size()));
}

void shuffle_xor(const void* value, void* out, size_t bytes, int lane_mask) {
  if (bytes > 8) throw std::runtime_error("cuda emulation: shuffles of more than 8 bytes");
  const int warp = warp_of_running(), lane = static_cast<int>(thread_index.x) % kWarp;
  const int size = warp_size_of(warp);
  unsigned char* lanes = block.lanes.data() + static_cast<size_t>(warp) * kWarp * 8;
  std::memcpy(lanes + lane * 8, value, bytes);
  wait_at(block.warp_barriers[warp], size);
  const int source = lane ^ lane_mask;
  std::memcpy(out, lanes + (source < size ? source : lane) * 8, bytes);
  wait_at(block.warp_barriers[warp], size);  // nobody overwrites a slot before it is read
}

void launch(dim3 grid, unsigned threads, unsigned char* shared, size_t shared_bytes,
            const std::function<void()>& kernel) {
  if (shared_bytes > kMaxSharedBytes)
    throw std::runtime_error("cuda emulation: " + std::to_string(shared_bytes) +
                             " bytes of shared memory, more than a block may have");
  grid_size = grid;
  block_size = dim3(threads);
  block.kernel = &kernel;
  block.fibers.resize(threads);
  block.warp_barriers.assign((threads + kWarp - 1) / kWarp, Barrier{});
  block.lanes.assign(block.warp_barriers.size() * kWarp * 8, 0);
  for (Fiber& f : block.fibers)
    if (!f.stack) f.stack = std::make_unique<char[]>(kStackBytes);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        block_index = {x, y, z};
        std::memset(shared, 0xff, shared_bytes);  // NaN in every float lane
        block.block_barrier = Barrier{};
        for (unsigned t = 0; t < threads; ++t) {
          Fiber& f = block.fibers[t];
          f.done = false;
          f.index = {t, 0, 0};
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = kStackBytes;
          f.context.uc_link = &block.scheduler;
          makecontext(&f.context, run_thread, 0);
        }
        // Every other block runs its threads from the last: a read of shared memory that another
        // thread writes in the same phase (no barrier between) then sees stale bytes in some
        // block whichever of the two threads is the lower.
        const bool from_last = (x + y + z) % 2 == 1;
        for (bool alive = true; alive;) {
          alive = false;
          block.progressed = false;
          for (unsigned k = 0; k < threads; ++k) {
            Fiber& f = block.fibers[from_last ? threads - 1 - k : k];
            if (f.done) continue;
            block.running = &f;
            thread_index = f.index;
            swapcontext(&block.scheduler, &f.context);
            alive = alive || !f.done;
          }
          if (alive && !block.progressed)
            throw std::runtime_error("cuda emulation: the threads of block (" + std::to_string(x) +
                                     ", " + std::to_string(y) + ") wait for each other forever");
        }
      }
}

}  // namespace relpos::cuda_emulation
