// CPU softmax / log_softmax and their backward along one dim. The input, made contiguous, is
// seen as [outer, D, inner]: a last-dim reduction (inner == 1) runs unit-stride SIMD loops over
// each row; otherwise up to kCols columns are reduced together so the inner loop stays unit-stride.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/backend.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kCols = 64;             // columns reduced together when dim is not the last
constexpr int64_t kParallelWork = 32768;  // below this many elements one thread does it all

struct Dims {
  int64_t outer = 1, D = 1, inner = 1;
};

Dims split_dims(const Shape& shape, int dim) {
  Dims s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < dim)
      s.outer *= shape[d];
    else if (d == dim)
      s.D = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

// Calls f(offset, width) once per row (inner == 1, width 1) or per block of columns: the slab
// starting at element `offset` of a [outer, D, inner] buffer, `width` columns wide.
template <typename F>
void for_each_slab(const Dims& s, F&& f) {
  const int64_t blocks = (s.inner + kCols - 1) / kCols;
  const int64_t tasks = s.outer * blocks;
#pragma omp parallel for schedule(static) if (s.outer * s.D * s.inner > kParallelWork)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / blocks, j = (t % blocks) * kCols;
    f(o * s.D * s.inner + j, std::min(kCols, s.inner - j));
  }
}

// x, y: [D] contiguous. Max, then exp and sum, then scale (or shift for log).
template <typename T>
RELPOS_SIMD_CLONES void forward_row(const T* x, T* y, int64_t D, bool log) {
  const T m = max_of(x, D);
  T sum = 0;
  if (log) {
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < D; ++i) sum += exp_fast(x[i] - m);
    const T log_sum = std::log(sum);
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) - log_sum;
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < D; ++i) {
      y[i] = exp_fast(x[i] - m);
      sum += y[i];
    }
    const T inv = T(1) / sum;
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] *= inv;
  }
}

// x, y: [D, inner] with w <= kCols columns used (row stride `inner`).
template <typename T>
RELPOS_SIMD_CLONES void forward_cols(const T* x, T* y, int64_t D, int64_t inner, int64_t w,
                                     bool log) {
  OrderKey<T> key[kCols];  // running column maxima as order keys (vec_math.h)
  std::fill_n(key, w, std::numeric_limits<OrderKey<T>>::min());
  for (int64_t d = 0; d < D; ++d) {
    const T* xd = x + d * inner;
#pragma omp simd
    for (int64_t c = 0; c < w; ++c) key[c] = std::max(key[c], order_key(xd[c]));
  }
  T m[kCols], sum[kCols];
  for (int64_t c = 0; c < w; ++c) m[c] = from_order_key<T>(key[c]);
  std::fill_n(sum, w, T(0));
  for (int64_t d = 0; d < D; ++d) {
    const T* xd = x + d * inner;
    T* yd = y + d * inner;
#pragma omp simd
    for (int64_t c = 0; c < w; ++c) {
      yd[c] = exp_fast(xd[c] - m[c]);
      sum[c] += yd[c];
    }
  }
  // From here sum[c] holds log(sum) for log_softmax and 1 / sum for softmax.
  for (int64_t c = 0; c < w; ++c) sum[c] = log ? std::log(sum[c]) : T(1) / sum[c];
  for (int64_t d = 0; d < D; ++d) {
    const T* xd = x + d * inner;
    T* yd = y + d * inner;
    if (log) {
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) yd[c] = (xd[c] - m[c]) - sum[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) yd[c] *= sum[c];
    }
  }
}

// softmax: gx = y * (gy - sum(gy * y)); log_softmax: gx = gy - exp(y) * sum(gy). All [D].
template <typename T>
RELPOS_SIMD_CLONES void backward_row(const T* y, const T* gy, T* gx, int64_t D, bool log) {
  T acc = 0;
  if (log) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < D; ++i) acc += gy[i];
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) gx[i] = gy[i] - exp_fast(y[i]) * acc;
  } else {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < D; ++i) acc += gy[i] * y[i];
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) gx[i] = y[i] * (gy[i] - acc);
  }
}

// The same on [D, inner] slabs of w columns.
template <typename T>
RELPOS_SIMD_CLONES void backward_cols(const T* y, const T* gy, T* gx, int64_t D, int64_t inner,
                                      int64_t w, bool log) {
  T acc[kCols];
  std::fill_n(acc, w, T(0));
  for (int64_t d = 0; d < D; ++d) {
    const T* yd = y + d * inner;
    const T* gd = gy + d * inner;
#pragma omp simd
    for (int64_t c = 0; c < w; ++c) acc[c] += log ? gd[c] : gd[c] * yd[c];
  }
  for (int64_t d = 0; d < D; ++d) {
    const T* yd = y + d * inner;
    const T* gd = gy + d * inner;
    T* od = gx + d * inner;
    if (log) {
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) od[c] = gd[c] - exp_fast(yd[c]) * acc[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) od[c] = yd[c] * (gd[c] - acc[c]);
    }
  }
}

}  // namespace

void softmax(const Tensor& x, int dim, bool log, const Tensor& out) {
  const Tensor xc = x.contiguous();  // x: [outer, D, inner]
  const Dims s = split_dims(x.shape(), dim);
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = xc.data<T>();
    T* yp = out.data<T>();  // out: [outer, D, inner]
    for_each_slab(s, [&](int64_t off, int64_t w) {
      if (s.inner == 1)
        forward_row(xp + off, yp + off, s.D, log);
      else
        forward_cols(xp + off, yp + off, s.D, s.inner, w, log);
    });
  });
}

void softmax_backward(const Tensor& y, const Tensor& gy, int dim, bool log, const Tensor& gx) {
  const Tensor yc = y.contiguous(), gc = gy.contiguous();  // [outer, D, inner]
  const Dims s = split_dims(y.shape(), dim);
  dispatch_floating(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* yp = yc.data<T>();
    const T* gp = gc.data<T>();
    T* op = gx.data<T>();  // gx: [outer, D, inner]
    for_each_slab(s, [&](int64_t off, int64_t w) {
      if (s.inner == 1)
        backward_row(yp + off, gp + off, op + off, s.D, log);
      else
        backward_cols(yp + off, gp + off, op + off, s.D, s.inner, w, log);
    });
  });
}

}  // namespace relpos::cpu
