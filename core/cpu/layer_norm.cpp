// CPU layer norm over the last dim: forward one row per task, backward one block of rows per
// task. Row statistics are two-pass (mean, then mean squared deviation) accumulated in f64;
// dweight/dbias are summed over fixed row blocks in f64, so they do not depend on thread count.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kParallelWork = 32768;  // below this many elements one thread does it all
constexpr int64_t kMaxBlocks = 64;        // row blocks holding partial dweight/dbias sums

// x, y: [D]; w, b: [D] or nullptr. Writes y and returns {mean, rstd}.
template <typename T>
RELPOS_SIMD_CLONES std::pair<T, T> forward_row(const T* x, const T* w, const T* b, double eps, T* y,
                                               int64_t D) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < D; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(D);
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < D; ++i) {
    const double c = x[i] - mean;
    sq += c * c;
  }
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(D) + eps);
  const T m = static_cast<T>(mean), r = static_cast<T>(rstd);
  if (w != nullptr && b != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) * r * w[i] + b[i];
  } else if (w != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) * r * w[i];
  } else if (b != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) * r + b[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) * r;
  }
  return {m, r};
}

// gy, x, dx: [D]; w: [D] or nullptr; dw_acc, db_acc: [D] f64 running sums or nullptr.
// With g = gy * w and xhat = (x - mean) * rstd: dx = rstd * (g - mean(g) - xhat * mean(g xhat)).
template <typename T>
RELPOS_SIMD_CLONES void backward_row(const T* gy, const T* x, T mean, T rstd, const T* w, T* dx,
                                     double* dw_acc, double* db_acc, int64_t D) {
  double sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
  for (int64_t i = 0; i < D; ++i) {
    const T g = w != nullptr ? gy[i] * w[i] : gy[i];
    sum_g += g;
    sum_gx += g * ((x[i] - mean) * rstd);
  }
  const T a = static_cast<T>(sum_g / static_cast<double>(D));
  const T c = static_cast<T>(sum_gx / static_cast<double>(D));
#pragma omp simd
  for (int64_t i = 0; i < D; ++i) {
    const T g = w != nullptr ? gy[i] * w[i] : gy[i];
    dx[i] = rstd * (g - a - (x[i] - mean) * rstd * c);
  }
  if (dw_acc != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) dw_acc[i] += gy[i] * ((x[i] - mean) * rstd);
  }
  if (db_acc != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) db_acc[i] += gy[i];
  }
}

}  // namespace

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  const Tensor xc = x.contiguous();                                     // x: [R, D]
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();  // [D]
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();      // [D]
  const int64_t R = x.size(0), D = x.size(1);
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = xc.data<T>();
    const T* wp = wc.defined() ? wc.data<T>() : nullptr;
    const T* bp = bc.defined() ? bc.data<T>() : nullptr;
    T* yp = y.data<T>();     // y: [R, D]
    T* mp = mean.data<T>();  // mean: [R]
    T* rp = rstd.data<T>();  // rstd: [R]
#pragma omp parallel for schedule(static) if (R * D > kParallelWork)
    for (int64_t r = 0; r < R; ++r) {
      const auto [m, s] = forward_row(xp + r * D, wp, bp, eps, yp + r * D, D);
      mp[r] = m;
      rp[r] = s;
    }
  });
}

void layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias) {
  const Tensor gc = gy.contiguous(), xc = x.contiguous();               // [R, D]
  const Tensor mc = mean.contiguous(), rc = rstd.contiguous();          // [R]
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();  // [D]
  const int64_t R = x.size(0), D = x.size(1);
  const int64_t blocks = std::min(R, kMaxBlocks);
  // Partial sums per row block: [blocks, D] each, f64.
  std::vector<double> part_w(dweight.defined() ? blocks * D : 0);
  std::vector<double> part_b(dbias.defined() ? blocks * D : 0);
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gp = gc.data<T>();
    const T* xp = xc.data<T>();
    const T* mp = mc.data<T>();
    const T* rp = rc.data<T>();
    const T* wp = wc.defined() ? wc.data<T>() : nullptr;
    T* dxp = dx.data<T>();  // dx: [R, D]
#pragma omp parallel for schedule(static) if (R * D > kParallelWork)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      double* pw = part_w.empty() ? nullptr : part_w.data() + blk * D;
      double* pb = part_b.empty() ? nullptr : part_b.data() + blk * D;
      for (int64_t r = blk * R / blocks; r < (blk + 1) * R / blocks; ++r)
        backward_row(gp + r * D, xp + r * D, mp[r], rp[r], wp, dxp + r * D, pw, pb, D);
    }
    // Blocks summed in a fixed order: dweight, dbias: [D].
    auto reduce_blocks = [&](const std::vector<double>& part, const Tensor& out) {
      if (part.empty()) return;
      std::vector<double> total(D, 0.0);
      for (int64_t blk = 0; blk < blocks; ++blk)
        for (int64_t i = 0; i < D; ++i) total[i] += part[blk * D + i];
      T* o = out.data<T>();
      for (int64_t i = 0; i < D; ++i) o[i] = static_cast<T>(total[i]);
    };
    reduce_blocks(part_w, dweight);
    reduce_blocks(part_b, dbias);
  });
}

}  // namespace relpos::cpu
