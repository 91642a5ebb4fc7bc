// CPU cross-entropy fused with log_softmax: loss[n] = logsumexp(logits[n]) - logits[n, t[n]],
// and its gradient row_grad[n] * (softmax(logits[n]) - onehot(t[n])); ignored rows give 0.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kParallelWork = 32768;  // below this many logits one thread does it all

// target: [N] i32/i64, any strides -> host values, each checked to lie in [0, C) unless ignored.
// Checked before any parallel region, so the error names the first bad row.
std::vector<int64_t> read_targets(const char* op, const Tensor& target, int64_t C,
                                  int64_t ignore_index) {
  const Tensor tc = target.contiguous();  // a CPU kernel reads its input in place
  std::vector<int64_t> t;
  if (tc.dtype() == DType::i64)
    t.assign(tc.data<int64_t>(), tc.data<int64_t>() + tc.numel());
  else
    t.assign(tc.data<int32_t>(), tc.data<int32_t>() + tc.numel());
  for (size_t n = 0; n < t.size(); ++n)
    RELPOS_CHECK(t[n] == ignore_index || (t[n] >= 0 && t[n] < C), op,
                 "target {} out of range [0, {}) at row {}", t[n], C, n);
  return t;
}

// x: [C]. Returns {max, sum exp(x - max)}.
template <typename T>
RELPOS_SIMD_CLONES std::pair<T, T> max_and_sum_exp(const T* x, int64_t C) {
  const T m = max_of(x, C);
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < C; ++i) sum += exp_fast(x[i] - m);
  return {m, sum};
}

}  // namespace

void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                   const Tensor& losses) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const std::vector<int64_t> t = read_targets("cross_entropy", target, C, ignore_index);
  const Tensor lc = logits.contiguous();  // logits: [N, C]
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = lc.data<T>();
    T* loss = losses.data<T>();  // losses: [N]
#pragma omp parallel for schedule(static) if (N * C > kParallelWork)
    for (int64_t n = 0; n < N; ++n) {
      if (t[n] == ignore_index) {
        loss[n] = 0;
        continue;
      }
      const T* row = x + n * C;
      const auto [m, sum] = max_and_sum_exp(row, C);
      loss[n] = std::log(sum) - (row[t[n]] - m);
    }
  });
}

void cross_entropy_backward(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                            const Tensor& row_grad, const Tensor& dlogits) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const std::vector<int64_t> t = read_targets("cross_entropy_backward", target, C, ignore_index);
  const Tensor gc = row_grad.contiguous();  // row_grad: [N], logits' dtype
  const Tensor lc = logits.contiguous();    // logits: [N, C]
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = gc.data<T>();
    const T* x = lc.data<T>();
    T* dx = dlogits.data<T>();  // dlogits: [N, C]
#pragma omp parallel for schedule(static) if (N * C > kParallelWork)
    for (int64_t n = 0; n < N; ++n) {
      T* out = dx + n * C;
      if (t[n] == ignore_index) {
        std::fill_n(out, C, T(0));
        continue;
      }
      const T* row = x + n * C;
      const auto [row_max, sum] = max_and_sum_exp(row, C);
      const T m = row_max;         // a plain variable: clang cannot capture a binding in `omp simd`
      const T scale = g[n] / sum;  // row_grad * softmax = scale * exp(x - m)
#pragma omp simd
      for (int64_t i = 0; i < C; ++i) out[i] = scale * exp_fast(row[i] - m);
      out[t[n]] -= g[n];
    }
  });
}

}  // namespace relpos::cpu
