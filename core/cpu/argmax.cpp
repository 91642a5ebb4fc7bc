// CPU argmax along one dim: x (in memory order) viewed as [outer, K, inner]; each task keeps a
// running maximum and its index for a chunk of columns while walking K, reading rows contiguously.
#include <algorithm>

#include "core/backend.h"
#include "core/cpu/memory_order.h"

namespace relpos::cpu {

namespace {

void argmax_contiguous(const Tensor& xc, int dim, const Tensor& out) {
  // xc: [outer, K, inner] contiguous -> out: [outer, 1, inner] i64.
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= xc.size(d);
  for (int d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
  const int64_t K = xc.size(dim);
  constexpr int64_t kChunk = 256;  // columns per task
  const int64_t chunks = (inner + kChunk - 1) / kChunk;
  int64_t* po = out.data<int64_t>();
  dispatch_dtype(xc.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = xc.data<T>();
#pragma omp parallel for schedule(static) if (outer * K * inner > 32768)
    for (int64_t t = 0; t < outer * chunks; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * kChunk;
      const int64_t w = std::min(kChunk, inner - c0);
      const T* xo = px + o * K * inner + c0;
      T best[kChunk];  // best: [w], running max per column
      int64_t* idx = po + o * inner + c0;
      for (int64_t c = 0; c < w; ++c) {
        best[c] = xo[c];
        idx[c] = 0;
      }
      for (int64_t k = 1; k < K; ++k)
        for (int64_t c = 0; c < w; ++c) {
          const T v = xo[k * inner + c];
          // Strictly greater keeps the first maximum; the first NaN wins and stays.
          if (v > best[c] || (v != v && best[c] == best[c])) {
            best[c] = v;
            idx[c] = k;
          }
        }
    }
  });
}

}  // namespace

void argmax(const Tensor& x, int dim, const Tensor& out) {
  // x: [...] any strides, taken in memory order; out: x's shape with dim set to 1, i64.
  in_memory_order(x, {dim}, out,
                  [](const Tensor& xm, const std::vector<int>& dm, const Tensor& om) {
                    argmax_contiguous(xm, dm[0], om);
                  });
}

}  // namespace relpos::cpu
