// CPU rfft / irfft over the rows of a [R, n] buffer with FFTW3 (fftwf_* for f32, fftw_* for f64).
// Plans are made once per (dtype, direction, n, rows, array alignments) and cached; rows are split
// into chunks by the shape alone (split_rows), each run through a cached plan on its own arrays.
#include <fftw3.h>

#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/backend.h"

namespace relpos::cpu {

namespace {

enum class Direction { forward, inverse };

// FFTW's float and double APIs under one name. Plans are made with FFTW_ESTIMATE, which plans
// without touching the arrays, and are run only on arrays of the alignment they were made for.
template <typename T>
struct Fftw;

template <>
struct Fftw<float> {
  using Complex = fftwf_complex;
  using Plan = fftwf_plan;
  static Plan plan_r2c(int n, int rows, float* in, Complex* out, unsigned flags) {
    return fftwf_plan_many_dft_r2c(1, &n, rows, in, nullptr, 1, n, out, nullptr, 1, n / 2 + 1,
                                   flags);
  }
  static Plan plan_c2r(int n, int rows, Complex* in, float* out, unsigned flags) {
    return fftwf_plan_many_dft_c2r(1, &n, rows, in, nullptr, 1, n / 2 + 1, out, nullptr, 1, n,
                                   flags);
  }
  static void r2c(Plan p, float* in, Complex* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void c2r(Plan p, Complex* in, float* out) { fftwf_execute_dft_c2r(p, in, out); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
  static int alignment_of(float* p) { return fftwf_alignment_of(p); }
};

template <>
struct Fftw<double> {
  using Complex = fftw_complex;
  using Plan = fftw_plan;
  static Plan plan_r2c(int n, int rows, double* in, Complex* out, unsigned flags) {
    return fftw_plan_many_dft_r2c(1, &n, rows, in, nullptr, 1, n, out, nullptr, 1, n / 2 + 1,
                                  flags);
  }
  static Plan plan_c2r(int n, int rows, Complex* in, double* out, unsigned flags) {
    return fftw_plan_many_dft_c2r(1, &n, rows, in, nullptr, 1, n / 2 + 1, out, nullptr, 1, n,
                                  flags);
  }
  static void r2c(Plan p, double* in, Complex* out) { fftw_execute_dft_r2c(p, in, out); }
  static void c2r(Plan p, Complex* in, double* out) { fftw_execute_dft_c2r(p, in, out); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
  static int alignment_of(double* p) { return fftw_alignment_of(p); }
};

// Owns every plan made for one dtype; they are destroyed at program exit.
template <typename T>
class PlanCache {
 public:
  using Plan = typename Fftw<T>::Plan;
  using Complex = typename Fftw<T>::Complex;

  PlanCache() = default;
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;
  ~PlanCache() {
    for (auto& [key, plan] : plans_) Fftw<T>::destroy(plan);
  }

  // The plan for `rows` transforms of length n between `real` ([rows, n]) and `complex`
  // ([rows, n/2+1]), or arrays of the same alignment. Made on first use under the lock, since
  // FFTW's planner is not thread-safe. (FFTW_UNALIGNED plans would fit any array but lose SIMD:
  // 2-4x slower, so the alignments are part of the key instead.)
  Plan get(Direction dir, int n, int rows, T* real, Complex* complex) {
    const Key key{dir, n, rows, Fftw<T>::alignment_of(real),
                  Fftw<T>::alignment_of(reinterpret_cast<T*>(complex))};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    const Plan plan = dir == Direction::forward
                          ? Fftw<T>::plan_r2c(n, rows, real, complex, FFTW_ESTIMATE)
                          : Fftw<T>::plan_c2r(n, rows, complex, real, FFTW_ESTIMATE);
    RELPOS_CHECK(plan != nullptr, dir == Direction::forward ? "rfft" : "irfft",
                 "FFTW could not plan {} transforms of length {}", rows, n);
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  // (direction, n, rows, alignment of the real array, alignment of the complex array)
  using Key = std::tuple<Direction, int, int, int, int>;
  std::mutex mutex_;
  std::map<Key, Plan> plans_;
};

template <typename T>
PlanCache<T>& plan_cache() {
  static PlanCache<T> cache;
  return cache;
}

// Rows [first(i), first(i) + rows_of(i)) form chunk i. Work worth splitting is cut into up to
// kParts chunks, by the shape alone, so the transforms (FFTW's plan may depend on the number of
// rows it batches) are the same for every thread count.
struct Chunks {
  int64_t rows = 0, size = 0, count = 0;
  int64_t first(int64_t i) const { return i * size; }
  int64_t rows_of(int64_t i) const { return std::min(size, rows - i * size); }
};

Chunks split_rows(int64_t rows, int64_t n, const char* op) {
  RELPOS_CHECK(n <= INT_MAX, op, "transform length {} exceeds FFTW's int range", n);
  constexpr int64_t kParallelWork = 1
                                    << 15;  // samples below which a split costs more than it saves
  constexpr int64_t kParts = 8;
  const int64_t parts = rows * n >= kParallelWork ? std::min(rows, kParts) : 1;
  const int64_t size = std::min<int64_t>((rows + parts - 1) / parts, INT_MAX);
  return {rows, size, (rows + size - 1) / size};
}

// The plan of every chunk, fetched before the parallel region (planning may throw).
// real: [R, n], complex: [R, n/2+1].
template <typename T>
std::vector<typename Fftw<T>::Plan> chunk_plans(Direction dir, int64_t n, const Chunks& c, T* real,
                                                typename Fftw<T>::Complex* complex) {
  std::vector<typename Fftw<T>::Plan> plans;
  for (int64_t i = 0; i < c.count; ++i)
    plans.push_back(plan_cache<T>().get(dir, static_cast<int>(n), static_cast<int>(c.rows_of(i)),
                                        real + c.first(i) * n, complex + c.first(i) * (n / 2 + 1)));
  return plans;
}

template <typename T>
void rfft_rows(const Tensor& x, int64_t n, const Tensor& out) {
  using Complex = typename Fftw<T>::Complex;
  const int64_t h = n / 2 + 1;
  const Chunks c = split_rows(x.size(0), n, "rfft");
  T* in = x.data<T>();                                        // in: [R, n] (r2c only reads it)
  Complex* spec = reinterpret_cast<Complex*>(out.data<T>());  // spec: [R, h]
  const auto plans = chunk_plans<T>(Direction::forward, n, c, in, spec);
#pragma omp parallel for schedule(static) if (c.count > 1)
  for (int64_t i = 0; i < c.count; ++i)
    Fftw<T>::r2c(plans[i], in + c.first(i) * n, spec + c.first(i) * h);
}

template <typename T>
void irfft_rows(const Tensor& X, int64_t n, const Tensor& out) {
  using Complex = typename Fftw<T>::Complex;
  const int64_t h = n / 2 + 1;
  const Chunks c = split_rows(X.size(0), n, "irfft");
  // FFTW's c2r overwrites its input, so it runs on a copy. scratch: [R, h, 2]
  const Tensor scratch = X.clone();
  Complex* spec = reinterpret_cast<Complex*>(scratch.data<T>());  // spec: [R, h]
  T* res = out.data<T>();                                         // res: [R, n]
  const auto plans = chunk_plans<T>(Direction::inverse, n, c, res, spec);
  const T scale = T(1) / static_cast<T>(n);
#pragma omp parallel for schedule(static) if (c.count > 1)
  for (int64_t i = 0; i < c.count; ++i) {
    const int64_t first = c.first(i), last = first + c.rows_of(i);
    // A real signal's DC bin (and Nyquist bin, n even) is real: their imaginary parts are
    // ignored, as numpy and torch do.
    for (int64_t r = first; r < last; ++r) {
      spec[r * h][1] = 0;
      if (n % 2 == 0) spec[r * h + h - 1][1] = 0;
    }
    Fftw<T>::c2r(plans[i], spec + first * h, res + first * n);
    for (int64_t j = first * n; j < last * n; ++j) res[j] *= scale;
  }
}

}  // namespace

void rfft(const Tensor& x, int64_t n, const Tensor& out) {
  // x: [R, n] contiguous, out: [R, n/2+1, 2] contiguous
  if (x.size(0) == 0) return;
  dispatch_floating(x.dtype(), "rfft",
                    [&](auto tag) { rfft_rows<typename decltype(tag)::type>(x, n, out); });
}

void irfft(const Tensor& X, int64_t n, const Tensor& out) {
  // X: [R, n/2+1, 2] contiguous, out: [R, n] contiguous
  if (X.size(0) == 0) return;
  dispatch_floating(X.dtype(), "irfft",
                    [&](auto tag) { irfft_rows<typename decltype(tag)::type>(X, n, out); });
}

}  // namespace relpos::cpu
