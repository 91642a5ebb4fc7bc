// The fiber scheduler of emulator.h: fibers, a warp at a time; a barrier counts arrivals and
// releases its waiters by bumping a generation. A warp's threads run (round robin, through its
// warp barriers) until each has reached the block barrier or ended, then the next warp's: so one
// warp's writes between two block barriers land before another warp reads, whichever the order of
// warps, which alternates between blocks.
//
// A fiber is made once (ucontext) and then switched to and from with the compilers'
// __builtin_setjmp / __builtin_longjmp, which keep a frame, stack pointer and resume address
// and make no system call: swapcontext makes one per switch (for the signal mask), which took
// three quarters of the suite's time, and under ASan libc's longjmp unpoisons the stack it leaves
// (a system call and a shadow memset per switch), although no frame is abandoned here. The fibers
// outlive a block: a thread that ends parks, and the next block resumes it. Under ASan each switch
// is announced (__sanitizer_start_switch_fiber), so it checks the fibers' stacks as stacks.
#include "emulator.h"

#include <ucontext.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/bf16.h"

#if defined(__SANITIZE_ADDRESS__)
#define RELPOS_EMULATOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELPOS_EMULATOR_ASAN 1
#endif
#endif
#ifdef RELPOS_EMULATOR_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

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

// Where a fiber, or the scheduler on the caller's stack, stands while it is switched out.
struct Context {
  void* registers[5];  // __builtin_setjmp's buffer: frame and stack pointers, resume address
  const void* stack_bottom = nullptr;  // for ASan: the stack a switch to this context lands on
  size_t stack_bytes = 0;
  void* asan_fake_stack = nullptr;  // ASan's frames of this context while it is switched out
};

struct Fiber {
  Context context;
  std::unique_ptr<char[]> stack;
  uint3 index;
  bool done = true;
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
  Context scheduler;
  Cursor cursor;
  bool from_last = false;  // this block takes its warps, and their threads, from the last
  std::vector<std::unique_ptr<Fiber>> fibers;  // whose addresses their own stacks hold
  Fiber* running = nullptr;
  Fiber* starting = nullptr;  // the fiber being made, for its first instructions
  const std::function<void()>* kernel = nullptr;
  std::exception_ptr error;  // the first exception a thread of the block threw
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
      Fiber& f = *block.fibers[first + (block.from_last ? size - 1 - c.k : c.k)];
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

// ASan's side of a switch from `from` to `to`: announced before, completed on arrival (nothing
// without ASan).
void asan_leave([[maybe_unused]] Context& from, [[maybe_unused]] const Context& to) {
#ifdef RELPOS_EMULATOR_ASAN
  __sanitizer_start_switch_fiber(&from.asan_fake_stack, to.stack_bottom, to.stack_bytes);
#endif
}

void asan_arrive([[maybe_unused]] const Context& self) {
#ifdef RELPOS_EMULATOR_ASAN
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, nullptr, nullptr);
#endif
}

// The switch itself is not instrumented: ASan would unpoison the stack it leaves before each jump
// (a call it adds before any call that does not return).
#define RELPOS_NOT_INSTRUMENTED __attribute__((no_sanitize("address")))

// Resumes the context whose registers `registers` holds: in a function of its own, apart from the
// one that saved them, as __builtin_longjmp must be.
[[noreturn, gnu::noinline]] RELPOS_NOT_INSTRUMENTED void resume(void** registers) {
  __builtin_longjmp(registers, 1);
}

// Saves the running context in `from` and resumes `to`; returns once a switch resumes `from`.
// __builtin_setjmp keeps the frame and stack pointers only: the compiler saves and restores the
// other registers this function needs around it.
RELPOS_NOT_INSTRUMENTED void switch_context(Context& from, Context& to) {
  if (__builtin_setjmp(from.registers) == 0) {
    asan_leave(from, to);
    resume(to.registers);
  }
  asan_arrive(from);
}

// Switches from the running thread to the next one, or to the scheduler when none can run.
void yield() {
  Fiber* const from = block.running;
  Fiber* const to = next_runnable();
  if (to == nullptr) {
    switch_context(from->context, block.scheduler);
    return;
  }
  block.running = to;
  thread_index = to->index;
  switch_context(from->context, to->context);
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

// Every fiber's body: parks until a block starts its thread, runs the kernel (keeping the first
// exception of the block for launch to throw), marks the thread ended and parks again.
[[noreturn]] void fiber_main() {
  // The first arrival: ASan gives the bounds of the stack it came from, the scheduler's (one
  // thread calls launch).
#ifdef RELPOS_EMULATOR_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &block.scheduler.stack_bottom,
                                  &block.scheduler.stack_bytes);
#endif
  Fiber* const self = block.starting;
  for (;;) {
    switch_context(self->context, block.scheduler);
    try {
      (*block.kernel)();
    } catch (...) {
      if (!block.error) block.error = std::current_exception();
    }
    self->done = true;
  }
}

// A fiber on a stack of its own, entered once through ucontext to park in fiber_main.
std::unique_ptr<Fiber> make_fiber() {
  auto f = std::make_unique<Fiber>();
  f->stack = std::make_unique<char[]>(kStackBytes);
  f->context.stack_bottom = f->stack.get();
  f->context.stack_bytes = kStackBytes;
  ucontext_t start{};
  getcontext(&start);
  start.uc_stack.ss_sp = f->stack.get();
  start.uc_stack.ss_size = kStackBytes;
  start.uc_link = nullptr;
  makecontext(&start, fiber_main, 0);
  block.starting = f.get();
  if (__builtin_setjmp(block.scheduler.registers) == 0) {
    asan_leave(block.scheduler, f->context);
    setcontext(&start);
    throw std::runtime_error("cuda emulation: cannot enter a fiber");
  }
  asan_arrive(block.scheduler);
  return f;
}

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
  if (block.fibers.size() > threads) block.fibers.resize(threads);  // parked: nothing to unwind
  while (block.fibers.size() < threads) block.fibers.push_back(make_fiber());
  block.warp_barriers.assign((threads + kWarp - 1) / kWarp, Barrier{});
  block.lanes.assign(block.warp_barriers.size() * 2 * kWarp * kSlotBytes, 0);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        block_index = {x, y, z};
        std::memset(shared, 0xff, shared_bytes);  // NaN in every float lane
        block.block_barrier = Barrier{};
        for (unsigned t = 0; t < threads; ++t) {
          Fiber& f = *block.fibers[t];
          f.done = false;
          f.waiting_on = nullptr;
          f.index = {t, 0, 0};
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
          switch_context(block.scheduler, f->context);
        }
        const bool stuck = std::any_of(block.fibers.begin(), block.fibers.end(),
                                       [](const auto& f) { return !f->done; });
        if (block.error || stuck) {
          block.fibers.clear();  // threads left inside the kernel: their frames are abandoned
          if (block.error) std::rethrow_exception(std::exchange(block.error, nullptr));
          throw std::runtime_error("cuda emulation: the threads of block (" + std::to_string(x) +
                                   ", " + std::to_string(y) + ") wait for each other forever");
        }
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
