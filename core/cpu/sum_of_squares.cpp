// CPU sum of squares over a list of tensors (the global gradient norm): every tensor is cut into
// fixed chunks, each chunk folded in f64 by one task, and the chunks' sums added in list order, so
// the result depends on the shapes only, never on the thread count.
#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kChunk = 65536;  // elements per task

struct Chunk {
  const Tensor* x;
  int64_t begin, end;
};

template <typename T>
RELPOS_SIMD_CLONES double fold_squares(const T* x, int64_t n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return acc;
}

}  // namespace

void sum_of_squares(const std::vector<Tensor>& xs, const Tensor& out) {
  std::vector<Chunk> chunks;
  for (const Tensor& x : xs)
    for (int64_t b = 0; b < x.numel(); b += kChunk)
      chunks.push_back({&x, b, std::min(b + kChunk, x.numel())});
  std::vector<double> partial(chunks.size());  // partial: [chunks]
  const auto n = static_cast<int64_t>(chunks.size());
#pragma omp parallel for schedule(static) if (n > 1)
  for (int64_t c = 0; c < n; ++c) {
    const Chunk& k = chunks[c];
    partial[c] = k.x->dtype() == DType::f64
                     ? fold_squares(k.x->data<double>() + k.begin, k.end - k.begin)
                     : fold_squares(k.x->data<float>() + k.begin, k.end - k.begin);
  }
  double total = 0;
  for (double p : partial) total += p;
  *out.data<double>() = total;
}

}  // namespace relpos::cpu
