// The fiber scheduler of emulator.h: ucontext fibers, a warp at a time; a barrier counts arrivals
// and releases its waiters by bumping a generation. A warp's threads run (round robin, through
// its warp barriers) until each has reached the block barrier or ended, then the next warp's: so
// one warp's writes between two block barriers land before another warp reads, whichever the
// order of warps, which alternates between blocks.
#include "emulator.h"

#include <ucontext.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/bf16.h"

namespace relpos::cuda_emulation {

uint3 thread_index, block_index;
dim3 grid_size, block_size;

namespace {

constexpr size_t kStackBytes = size_t{256} << 10;
constexpr int kWarp = 32;

struct Barrier {
  int arrived = 0;
  unsigned generation = 0;
};

struct Fiber {
  ucontext_t context{};
  std::unique_ptr<char[]> stack;
  uint3 index;
  bool done = false;
  const Barrier* waiting_on = nullptr;  // and the generation that has not yet opened
  unsigned waiting_generation = 0;
};

// Where the order of turns stands in a block: warp w (in the block's order), its thread k, and
// whether a thread ran in this round through the warp and in this pass through the warps.
struct Cursor {
  unsigned w = 0, k = 0;
  bool ran_in_round = false, ran_in_pass = false;
};

struct Block {
  ucontext_t scheduler{};
  Cursor cursor;
  bool from_last = false;  // this block takes its warps, and their threads, from the last
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  const std::function<void()>* kernel = nullptr;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  // [warps][2][kWarp][kSlotBytes]: the values lanes exchange, in two sets used by turns (by the
  // parity of the warp barrier's generation), so a lane writes the next exchange's slot while
  // slower lanes still read the last one's, and one barrier per exchange suffices.
  std::vector<unsigned char> lanes;
};

Block block;

bool runnable(const Fiber& f) {
  return !f.done && (f.waiting_on == nullptr || f.waiting_on->generation != f.waiting_generation);
}

// The next thread to run: a warp's threads in turn, round after round, until none of them can run
// (each waits at the block barrier or has ended), then the next warp's; null after a pass through
// every warp in which no thread ran (the block has ended, or its threads wait for each other).
Fiber* next_runnable() {
  Cursor& c = block.cursor;
  const unsigned threads = static_cast<unsigned>(block.fibers.size());
  const unsigned warps = (threads + kWarp - 1) / kWarp;
  for (;;) {
    const unsigned warp = block.from_last ? warps - 1 - c.w : c.w;
    const unsigned first = warp * kWarp, size = std::min<unsigned>(kWarp, threads - first);
    while (c.k < size) {
      Fiber& f = block.fibers[first + (block.from_last ? size - 1 - c.k : c.k)];
      ++c.k;
      if (runnable(f)) {
        c.ran_in_round = c.ran_in_pass = true;
        return &f;
      }
    }
    c.k = 0;
    if (c.ran_in_round) {  // another round through this warp
      c.ran_in_round = false;
      continue;
    }
    if (++c.w < warps) continue;
    c.w = 0;
    if (!c.ran_in_pass) return nullptr;
    c.ran_in_pass = false;
  }
}

// Switches from the running thread to the next one, or to the scheduler when none can run: one
// context switch per turn (each costs a system call, for the signal mask).
void yield() {
  Fiber* const from = block.running;
  Fiber* const to = next_runnable();
  if (to == nullptr) {
    swapcontext(&from->context, &block.scheduler);
    return;
  }
  block.running = to;
  thread_index = to->index;
  swapcontext(&from->context, &to->context);
}

// Waits until `participants` threads have arrived at b.
void wait_at(Barrier& b, int participants) {
  const unsigned generation = b.generation;
  if (++b.arrived == participants) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  block.running->waiting_on = &b;
  block.running->waiting_generation = generation;
  yield();  // resumed once b has opened
  block.running->waiting_on = nullptr;
}

void run_thread() {
  (*block.kernel)();
  block.running->done = true;
}  // returns to the scheduler (uc_link)

int warp_of_running() {
  return static_cast<int>(thread_index.x) / kWarp;
}

int warp_size_of(int warp) {
  const int threads = static_cast<int>(block.fibers.size());
  return std::min(kWarp, threads - warp * kWarp);
}

// The slots of `warp` for the exchange the warp's lanes join next: the generation of the warp
// barrier does not change before every lane has arrived, and a lane that writes the same set two
// generations later has passed a barrier that every reader of this one reached after reading.
unsigned char* slots_of(int warp) {
  const size_t set = block.warp_barriers[warp].generation % 2;
  return block.lanes.data() + (static_cast<size_t>(warp) * 2 + set) * kWarp * kSlotBytes;
}

}  // namespace

void sync_block() {
  wait_at(block.block_barrier, static_cast<int>(block.fibers.size()));
}

void sync_warp() {
  const int warp = warp_of_running();
  wait_at(block.warp_barriers[warp], warp_size_of(warp));
}

void shuffle_xor(const void* value, void* out, size_t bytes, int lane_mask) {
  if (bytes > 8) throw std::runtime_error("cuda emulation: shuffles of more than 8 bytes");
  const int warp = warp_of_running(), lane = static_cast<int>(thread_index.x) % kWarp;
  const int size = warp_size_of(warp);
  unsigned char* lanes = slots_of(warp);
  std::memcpy(lanes + lane * kSlotBytes, value, bytes);
  wait_at(block.warp_barriers[warp], size);
  const int source = lane ^ lane_mask;
  std::memcpy(out, lanes + (source < size ? source : lane) * kSlotBytes, bytes);
}

void exchange_in_warp(const void* mine, size_t bytes, unsigned char* all) {
  const int warp = warp_of_running(), lane = static_cast<int>(thread_index.x) % kWarp;
  if (bytes > kSlotBytes || warp_size_of(warp) != kWarp)
    throw std::runtime_error("cuda emulation: a warp-wide exchange needs 32 lanes of <= 32 bytes");
  unsigned char* lanes = slots_of(warp);
  std::memcpy(lanes + lane * kSlotBytes, mine, bytes);
  wait_at(block.warp_barriers[warp], kWarp);
  std::memcpy(all, lanes, kWarp * kSlotBytes);
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
  block.lanes.assign(block.warp_barriers.size() * 2 * kWarp * kSlotBytes, 0);
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
          f.waiting_on = nullptr;
          f.index = {t, 0, 0};
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = kStackBytes;
          f.context.uc_link = &block.scheduler;
          makecontext(&f.context, run_thread, 0);
        }
        // Every other block runs its warps, and their threads, from the last: a read of shared
        // memory that another thread writes in the same phase (no barrier between) then sees
        // stale bytes in some block whichever of the two threads is the lower.
        block.from_last = (x + y + z) % 2 == 1;
        block.cursor = Cursor{};
        // A thread that waits switches to the next itself (yield); the scheduler takes over when
        // a thread ends or none can run.
        while (Fiber* f = next_runnable()) {
          block.running = f;
          thread_index = f->index;
          swapcontext(&block.scheduler, &f->context);
        }
        if (std::any_of(block.fibers.begin(), block.fibers.end(),
                        [](const Fiber& f) { return !f.done; }))
          throw std::runtime_error("cuda emulation: the threads of block (" + std::to_string(x) +
                                   ", " + std::to_string(y) + ") wait for each other forever");
      }
}

}  // namespace relpos::cuda_emulation

void emulated_mma_m16n8k16_bf16(float& d0, float& d1, float& d2, float& d3, const uint32_t (&a)[4],
                                const uint32_t (&b)[2]) {
  using relpos::cuda_emulation::kSlotBytes;
  struct Fragments {
    uint32_t a[4], b[2];
  } mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  unsigned char all[32 * kSlotBytes];
  relpos::cuda_emulation::exchange_in_warp(&mine, sizeof mine, all);
  const auto half = [](uint32_t reg, int h) {
    return relpos::float_of_bf16_bits(static_cast<uint16_t>(reg >> (16 * h)));
  };
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    Fragments f;
    std::memcpy(&f, all + lane * kSlotBytes, sizeof f);
    const int g = lane / 4, t = lane % 4;
    for (int h = 0; h < 2; ++h) {
      A[g][2 * t + h] = half(f.a[0], h);
      A[g + 8][2 * t + h] = half(f.a[1], h);
      A[g][2 * t + 8 + h] = half(f.a[2], h);
      A[g + 8][2 * t + 8 + h] = half(f.a[3], h);
      B[2 * t + h][g] = half(f.b[0], h);
      B[2 * t + 8 + h][g] = half(f.b[1], h);
    }
  }
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  float* d[4] = {&d0, &d1, &d2, &d3};
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    float sum = *d[i];
    for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
    *d[i] = sum;
  }
}

void emulated_ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transposed) {
  using relpos::cuda_emulation::kSlotBytes;
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
    throw std::runtime_error("cuda emulation: ldmatrix row address not 16-byte aligned");
  unsigned char all[32 * kSlotBytes];
  relpos::cuda_emulation::exchange_in_warp(&row, sizeof row, all);
  const auto element = [&](int lane, int column) {  // of the row lane `lane` gave
    const uint16_t* p;
    std::memcpy(&p, all + lane * kSlotBytes, sizeof p);
    return static_cast<uint32_t>(p[column]);
  };
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i)
    r[i] = transposed ? element(8 * i + 2 * t, g) | element(8 * i + 2 * t + 1, g) << 16
                      : element(8 * i + g, 2 * t) | element(8 * i + g, 2 * t + 1) << 16;
}
