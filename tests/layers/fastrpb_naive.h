// Naive twins of the FastRPB encodings for tests/layers/test_fastrpb.cpp: the dense Toeplitz
// matrix (seed 002 eq. 12) and the dense 2-D distance tensor (§3.2.2) built entry by entry from
// their definitions, times V by explicit loops in f64 on the CPU. Never calls the FFT code.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/attention/attention.h"

namespace relpos::test {

// w_d from a stored weight: full [H, 2N - 1] (column d + N - 1) or symmetric [H, N] (column |d|).
class NaiveToeplitzWeights {
 public:
  NaiveToeplitzWeights(const Tensor& weight, bool symmetric);
  double at(int64_t head, int64_t d) const;

 private:
  std::vector<double> values_;
  int64_t cols_;
  bool symmetric_;
};

// W·V over the content tokens (positions front .. L - back - 1), W[i, j] = w_(i-j), zero for
// j > i when in.causal; padding keys (in.key_mask) left out; special-token rows zero. With a mask,
// the `back` specials are the last real tokens of each sequence (a [SEP] before the padding).
// v: [B, H, L, D] -> [B, H, L, D].
Tensor naive_fastrpb(const Tensor& weight, bool symmetric, const Tensor& v,
                     const AttentionInputs& in, int64_t front, int64_t back);

// W2d·V over a rows x cols grid of content tokens in raster order,
// W2d[(r,c),(r',c')] = t(r - r') + t(c - c'); padding keys left out; special-token rows zero.
// v: [B, H, L, D] -> [B, H, L, D].
Tensor naive_fastrpb2d(const Tensor& weight, bool symmetric, int64_t rows, int64_t cols,
                       const Tensor& v, const AttentionInputs& in, int64_t front, int64_t back);

}  // namespace relpos::test
