// CPU batched matmul: single-threaded OpenBLAS GEMMs over a split of the work that depends only
// on the shapes, run in parallel by relpos. OpenBLAS's own threading changes its blocking with
// the thread count, and with it the rounding (1 vs 2 threads differ in the last bits at every
// size above 64³), so results would depend on how many threads the machine left free. Strided
// and transposed views go to BLAS as they are (a column-major matrix is a row-major one with
// the transpose flag flipped); only a matrix with no unit inner stride is copied.
#include <algorithm>
#include <climits>

#include "core/backend.h"
#include "core/cpu/blas.h"
#include "core/gemm_operand.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kMaxParts = 8;            // blocks one GEMM is split into, at most
constexpr int64_t kMinPartWidth = 32;       // rows (or columns) of C per block, at least
constexpr int64_t kMinPartFlops = 1 << 21;  // 2 MFLOP per block, at least
constexpr int64_t kParallelFlops = 1 << 20;

// Blocks of C for one [m, n] x k GEMM: row blocks when m >= n, else column blocks. Each block
// packs the other operand again, so their number is capped (Table-2 step on one thread, against
// one unsplit GEMM: 16 blocks +5%, 8 blocks +4%, 2 blocks +1%; on two threads 8 and 16 blocks
// are equally fast, 2 blocks 3% slower).
int64_t parts_of(int64_t m, int64_t n, int64_t k) {
  const int64_t by_width = std::max(m, n) / kMinPartWidth, by_work = 2 * m * n * k / kMinPartFlops;
  return std::max<int64_t>(1, std::min({kMaxParts, by_width, by_work}));
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out) {
  // a: [B, M, K] (or [B, K, M]), b: [B, K, N] (or [B, N, K]), out: [B, M, N] contiguous; a and b
  // may also be [B1, B2, ., .] with B = B1 B2 (gemm_operand.h).
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2);
  const int64_t k = trans_a ? a.size(-2) : a.size(-1);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // empty sum: BLAS may reject ld = 0, and the answer is all zeros
    fill(out, 0);
    return;
  }
  RELPOS_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "matmul",
               "matrix dims M={} N={} K={} exceed BLAS's 32-bit int range", m, n, k);
  const GemmOperand pa = gemm_operand(a), pb = gemm_operand(b);
  // The stored matrix is op(a) or its transpose; a column-major one flips the flag.
  const bool ta = trans_a != pa.col_major, tb = trans_b != pb.col_major;
  dispatch_floating(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa_data = pa.data.data<T>();
    const T* pb_data = pb.data.data<T>();
    T* po = out.data<T>();  // po: [B, M, N]
    const int64_t parts = parts_of(m, n, k), tasks = batch * parts;
    const bool by_rows = m >= n;
    const int64_t width = by_rows ? m : n;
    run_blocks(tasks, tasks > 1 && batch * m * n * k > kParallelFlops, [&](int64_t t) {
      const int64_t i = t / parts, part = t % parts;
      const int64_t first = part * width / parts, last = (part + 1) * width / parts;
      const T* ai = pa_data + pa.offset(i);
      const T* bi = pb_data + pb.offset(i);
      T* ci = po + i * m * n;
      // Rows [first, last) of op(a) start `first` rows (ta: columns) into the stored matrix;
      // columns of op(b) likewise; then the block of C.
      if (by_rows)
        gemm(ta, tb, static_cast<int>(last - first), static_cast<int>(n), static_cast<int>(k), T(1),
             ai + (ta ? first : first * pa.ld), static_cast<int>(pa.ld), bi,
             static_cast<int>(pb.ld), T(0), ci + first * n, static_cast<int>(n));
      else
        gemm(ta, tb, static_cast<int>(m), static_cast<int>(last - first), static_cast<int>(k), T(1),
             ai, static_cast<int>(pa.ld), bi + (tb ? first * pb.ld : first),
             static_cast<int>(pb.ld), T(0), ci + first, static_cast<int>(n));
    });
  });
}

}  // namespace relpos::cpu
