// CPU reductions sum, max, logsumexp over any set of dims (argmax: cpu/argmax.cpp). x is taken in
// memory order (cpu/memory_order.h) and its dims merged into alternating kept/reduced groups. A
// reduced innermost group is folded along contiguous runs; a kept one is accumulated row by row.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/backend.h"
#include "core/cpu/memory_order.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kParallelWork = 32768;  // elements below which loops stay serial
constexpr int64_t kTaskWork = 65536;      // elements per task when one output is split
constexpr int64_t kMaxTasks = 16;         // fixed split: results never depend on thread count

// x (contiguous) as merged groups. out (contiguous, keepdim) enumerates the outer kept groups in
// row-major order, times `inner` when the innermost group is kept.
struct ReduceLayout {
  int64_t inner = 1;  // size of the innermost group (stride 1 in x)
  bool inner_reduced = false;
  Shape kept_sizes, kept_strides;  // outer kept groups, outermost first; strides in x
  Shape red_sizes, red_strides;    // outer reduced groups
  int64_t kept = 1, reduced = 1;   // number of outer kept / reduced indices
};

ReduceLayout make_reduce_layout(const Shape& shape, const std::vector<int>& dims) {
  std::vector<std::pair<int64_t, bool>> groups;  // (size, reduced), outermost first
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool red = std::binary_search(dims.begin(), dims.end(), static_cast<int>(d));
    if (!groups.empty() && groups.back().second == red)
      groups.back().first *= shape[d];
    else
      groups.push_back({shape[d], red});
  }
  ReduceLayout L;
  if (groups.empty()) return L;  // a single element
  L.inner = groups.back().first;
  L.inner_reduced = groups.back().second;
  groups.pop_back();
  int64_t stride = L.inner;
  for (size_t g = groups.size(); g-- > 0;) {  // innermost outer group first
    const auto [size, red] = groups[g];
    Shape& sizes = red ? L.red_sizes : L.kept_sizes;
    Shape& strides = red ? L.red_strides : L.kept_strides;
    sizes.insert(sizes.begin(), size);
    strides.insert(strides.begin(), stride);
    (red ? L.reduced : L.kept) *= size;
    stride *= size;
  }
  return L;
}

// Offset in x of the i-th (row-major) index over groups of `sizes` and `strides`.
int64_t group_offset(int64_t i, const Shape& sizes, const Shape& strides) {
  int64_t off = 0;
  for (size_t g = sizes.size(); g-- > 0;) {
    off += (i % sizes[g]) * strides[g];
    i /= sizes[g];
  }
  return off;
}

// A split of one output's work (R runs of n columns) into tasks of r-ranges x column ranges.
struct Split {
  int64_t R, n, r_parts, c_parts;
  int64_t count() const { return r_parts * c_parts; }
  std::array<int64_t, 4> range(int64_t t) const {  // {r0, r1, c0, c1}
    const int64_t rp = t / c_parts, cp = t % c_parts;
    return {R * rp / r_parts, R * (rp + 1) / r_parts, n * cp / c_parts, n * (cp + 1) / c_parts};
  }
};

template <typename T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// A policy: accumulator A, identity, fold (a contiguous run into one accumulator), fold_rows (a
// row into per-column accumulators), merge and finalize. `shift` (logsumexp) is the max per
// output, subtracted before exp.
template <typename T>
struct SumOp {
  using In = T;
  using A = Wide<T>;  // f32 sums accumulate in double, integer sums in int64
  using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  static A identity() { return 0; }
  RELPOS_SIMD_CLONES static A fold(A acc, const T* x, int64_t n, T) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(x[i]);
    return acc;
  }
  RELPOS_SIMD_CLONES static void fold_rows(A* acc, const T* x, int64_t n, const T*) {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<A>(x[i]);
  }
  static A merge(A a, A b) {
    return a + b;
  }
  static Out finalize(A a, T) {
    return static_cast<Out>(a);
  }
};

template <typename T>
struct MaxOp {
  using In = T;
  using A = T;
  using Out = T;
  static A identity() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  static A merge(A a, A b) { return fn::binary<BinaryOp::maximum, T>(a, b, T(0)); }  // NaN wins
  // A chain of compares does not vectorize; 16 independent lanes (fold_rows) do.
  RELPOS_SIMD_CLONES static A fold(A acc, const T* x, int64_t n, T) {
    constexpr int64_t kLanes = 16;
    A lanes[kLanes];  // lanes: [kLanes]
    std::fill(lanes, lanes + kLanes, acc);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) fold_rows(lanes, x + i, kLanes, nullptr);
    for (; i < n; ++i) acc = merge(acc, x[i]);
    for (A lane : lanes) acc = merge(acc, lane);
    return acc;
  }
  RELPOS_SIMD_CLONES static void fold_rows(A* acc, const T* x, int64_t n, const T*) {
    for (int64_t i = 0; i < n; ++i) acc[i] = merge(acc[i], x[i]);
  }
  static Out finalize(A a, T) { return a; }
};

// Second pass of logsumexp: shift + log(sum exp(x - shift)); x - shift <= 0 unless the max was
// not finite, where exp_fast still maps +inf, -inf and NaN like std::exp.
template <typename T>
struct SumExpOp {
  using In = T;
  using A = Wide<T>;
  using Out = T;
  static A identity() { return 0; }
  RELPOS_SIMD_CLONES static A fold(A acc, const T* x, int64_t n, T shift) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(exp_fast(x[i] - shift));
    return acc;
  }
  RELPOS_SIMD_CLONES static void fold_rows(A* acc, const T* x, int64_t n, const T* shift) {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<A>(exp_fast(x[i] - shift[i]));
  }
  static A merge(A a, A b) {
    return a + b;
  }
  static Out finalize(A a, T shift) {
    return static_cast<T>(shift + std::log(a));
  }
};

// x at kept index o and reduced index r (both over the outer groups).
template <typename T>
const T* x_at(const ReduceLayout& L, const T* x, int64_t o, int64_t r) {
  return x + group_offset(o, L.kept_sizes, L.kept_strides) +
         group_offset(r, L.red_sizes, L.red_strides);
}

// Reduced innermost group: out[o] = P over r of the run x[o, r, 0:n].
template <typename P>
void reduce_runs(const ReduceLayout& L, const typename P::In* x, typename P::Out* out,
                 const typename P::In* shift, bool parallel, int64_t tasks) {
  using T = typename P::In;
  using A = typename P::A;
  const int64_t n = L.inner, R = L.reduced;
  if (L.kept >= kMaxTasks || tasks == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < L.kept; ++o) {
      const T s = shift ? shift[o] : T(0);
      A acc = P::identity();
      for (int64_t r = 0; r < R; ++r) acc = P::fold(acc, x_at(L, x, o, r), n, s);
      out[o] = P::finalize(acc, s);
    }
    return;
  }
  // Few long outputs: split each over runs (or over columns when there are few runs).
  const int64_t r_parts = std::min(R, tasks);
  const Split sp{R, n, r_parts, std::min(n, (tasks + r_parts - 1) / r_parts)};
  std::vector<A> part(sp.count());  // one accumulator per task, merged in task order
  for (int64_t o = 0; o < L.kept; ++o) {
    const T s = shift ? shift[o] : T(0);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < sp.count(); ++t) {
      const auto [r0, r1, c0, c1] = sp.range(t);
      A acc = P::identity();
      for (int64_t r = r0; r < r1; ++r) acc = P::fold(acc, x_at(L, x, o, r) + c0, c1 - c0, s);
      part[t] = acc;
    }
    A acc = part[0];
    for (int64_t t = 1; t < sp.count(); ++t) acc = P::merge(acc, part[t]);
    out[o] = P::finalize(acc, s);
  }
}

// Kept innermost group: out[o, 0:n] = P over r of the rows x[o, r, 0:n].
template <typename P>
void reduce_rows(const ReduceLayout& L, const typename P::In* x, typename P::Out* out,
                 const typename P::In* shift, bool parallel, int64_t tasks) {
  using T = typename P::In;
  using A = typename P::A;
  const int64_t n = L.inner, R = L.reduced;
  if (L.kept >= kMaxTasks || tasks == 1) {
#pragma omp parallel if (parallel)
    {
      std::vector<A> acc(n);  // acc: [n], per thread
#pragma omp for schedule(static)
      for (int64_t o = 0; o < L.kept; ++o) {
        const T* so = shift ? shift + o * n : nullptr;
        std::fill(acc.begin(), acc.end(), P::identity());
        for (int64_t r = 0; r < R; ++r) P::fold_rows(acc.data(), x_at(L, x, o, r), n, so);
        for (int64_t i = 0; i < n; ++i) out[o * n + i] = P::finalize(acc[i], so ? so[i] : T(0));
      }
    }
    return;
  }
  // Few outputs: split wide rows by columns, else split the rows into ranges whose partial
  // accumulators are merged in order (summing [B*L, D] over rows to [D]).
  const bool by_columns = n >= tasks * 1024;
  const Split sp{R, n, by_columns ? 1 : std::min(R, tasks), by_columns ? tasks : 1};
  std::vector<A> part(sp.r_parts * n);  // part: [r_parts, n]
  for (int64_t o = 0; o < L.kept; ++o) {
    const T* so = shift ? shift + o * n : nullptr;
    std::fill(part.begin(), part.end(), P::identity());
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < sp.count(); ++t) {
      const auto [r0, r1, c0, c1] = sp.range(t);
      A* acc = part.data() + (t / sp.c_parts) * n + c0;
      for (int64_t r = r0; r < r1; ++r)
        P::fold_rows(acc, x_at(L, x, o, r) + c0, c1 - c0, so ? so + c0 : nullptr);
    }
    for (int64_t p = 1; p < sp.r_parts; ++p)
      for (int64_t i = 0; i < n; ++i) part[i] = P::merge(part[i], part[p * n + i]);
    for (int64_t i = 0; i < n; ++i) out[o * n + i] = P::finalize(part[i], so ? so[i] : T(0));
  }
}

// out (keepdim, contiguous) = P over the reduced groups of x; shift: per output or null.
template <typename P>
void reduce_with(const ReduceLayout& L, const typename P::In* x, typename P::Out* out,
                 const typename P::In* shift, int64_t numel) {
  using T = typename P::In;
  if (numel == 0) {  // empty reduction: the identity (sum 0, logsumexp -inf)
    const int64_t n_out = L.inner_reduced ? L.kept : L.kept * L.inner;
    for (int64_t o = 0; o < n_out; ++o) out[o] = P::finalize(P::identity(), T(0));
    return;
  }
  const bool parallel = numel > kParallelWork;
  const int64_t tasks = std::clamp<int64_t>(numel / L.kept / kTaskWork, 1, kMaxTasks);
  if (L.inner_reduced)
    reduce_runs<P>(L, x, out, shift, parallel, tasks);
  else
    reduce_rows<P>(L, x, out, shift, parallel, tasks);
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& dims, const Tensor& out) {
  // x: [...] any strides; out: x's shape with dims set to 1, contiguous.
  in_memory_order(
      x, dims, out, [&](const Tensor& xm, const std::vector<int>& dm, const Tensor& om) {
        const ReduceLayout L = make_reduce_layout(xm.shape(), dm);
        const int64_t numel = xm.numel();
        dispatch_dtype(xm.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = xm.data<T>();
          if (op == ReduceOp::sum) {
            reduce_with<SumOp<T>>(L, px, om.data<typename SumOp<T>::Out>(), nullptr, numel);
          } else if (op == ReduceOp::max) {
            reduce_with<MaxOp<T>>(L, px, om.data<T>(), nullptr, numel);
          } else if constexpr (std::is_floating_point_v<T>) {  // logsumexp: max, then sum of exp
            T* po = om.data<T>();
            reduce_with<MaxOp<T>>(L, px, po, nullptr, numel);
            // shift: [om.numel()]; an infinite or NaN max gives shift 0, so an all -inf row sums
            // exp(-inf) = 0 to -inf, and +inf / NaN propagate instead of becoming inf - inf.
            std::vector<T> shift(om.numel());
            for (size_t i = 0; i < shift.size(); ++i)
              shift[i] = std::isfinite(po[i]) ? po[i] : T(0);
            reduce_with<SumExpOp<T>>(L, px, po, shift.data(), numel);
          } else {
            fail("logsumexp", "expects a floating dtype (f32 or f64), got {}",
                 dtype_name(x.dtype()));
          }
        });
      });
}

}  // namespace relpos::cpu
