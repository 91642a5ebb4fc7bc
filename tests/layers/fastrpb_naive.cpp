// Naive FastRPB twins (tests/layers/fastrpb_naive.h).
#include "tests/layers/fastrpb_naive.h"

#include <doctest/doctest.h>

#include <cstdlib>

namespace relpos::test {
namespace {

// out[b, h, front + i] = sum_j dense[h, i, j] * v[b, h, front + j] over real keys, where dense is
// [H, n, n] (n content tokens) and every other row of out is zero.
// With `tail_specials` > 0 (1-D), the last that many REAL tokens of each sequence are specials
// (a [SEP] before the padding): neither keys nor output rows.
Tensor dense_times_values(const std::vector<double>& dense, int64_t n, const Tensor& v,
                          const AttentionInputs& in, int64_t front, int64_t tail_specials = 0) {
  const int64_t B = v.size(0), H = v.size(1), L = v.size(2), D = v.size(3);
  const auto vv = v.to(DType::f64).to_vector<double>();
  std::vector<uint8_t> keep(B * L, 1);
  if (in.key_mask.defined()) keep = in.key_mask.to(Device::cpu()).to_vector<uint8_t>();
  std::vector<uint8_t> row(B * L, 1);
  if (in.key_mask.defined() && tail_specials > 0)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = L - 1, left = tail_specials; p >= 0 && left > 0; --p)
        if (keep[b * L + p] != 0) {
          keep[b * L + p] = row[b * L + p] = 0;
          --left;
        }
  std::vector<double> out(B * H * L * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          if (keep[b * L + front + j] == 0 || row[b * L + front + i] == 0) continue;
          const double w = dense[(h * n + i) * n + j];
          for (int64_t d = 0; d < D; ++d)
            out[((b * H + h) * L + front + i) * D + d] +=
                w * vv[((b * H + h) * L + front + j) * D + d];
        }
  return Tensor::from_vector(out, {B, H, L, D});
}

}  // namespace

NaiveToeplitzWeights::NaiveToeplitzWeights(const Tensor& weight, bool symmetric)
    : values_(weight.to(DType::f64).to_vector<double>()),
      cols_(weight.size(1)),
      symmetric_(symmetric) {}

double NaiveToeplitzWeights::at(int64_t head, int64_t d) const {
  const int64_t col = symmetric_ ? std::abs(d) : d + (cols_ - 1) / 2;
  return values_[head * cols_ + col];
}

Tensor naive_fastrpb(const Tensor& weight, bool symmetric, const Tensor& v,
                     const AttentionInputs& in, int64_t front, int64_t back) {
  const int64_t H = v.size(1), n = v.size(2) - front - back;
  const NaiveToeplitzWeights w(weight, symmetric);
  std::vector<double> dense(H * n * n, 0.0);  // [H, n, n], W[i, j] = w_(i-j)
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (!in.causal || j <= i) dense[(h * n + i) * n + j] = w.at(h, i - j);
  return dense_times_values(dense, n, v, in, front, back);
}

Tensor naive_fastrpb2d(const Tensor& weight, bool symmetric, int64_t rows, int64_t cols,
                       const Tensor& v, const AttentionInputs& in, int64_t front, int64_t back) {
  const int64_t H = v.size(1), n = rows * cols;
  REQUIRE(v.size(2) == n + front + back);
  const NaiveToeplitzWeights t(weight, symmetric);
  std::vector<double> dense(H * n * n, 0.0);  // [H, n, n], W2d[(r,c),(r',c')]
  for (int64_t h = 0; h < H; ++h)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r2 = 0; r2 < rows; ++r2)
          for (int64_t c2 = 0; c2 < cols; ++c2)
            dense[(h * n + r * cols + c) * n + r2 * cols + c2] = t.at(h, r - r2) + t.at(h, c - c2);
  return dense_times_values(dense, n, v, in, front);
}

}  // namespace relpos::test
