// Shared by the attention tests: random multi-head inputs and key masks, building a variant or
// an encoding from options, the naive softmax attention every score-forming variant is checked
// against (explicit loops in f64), and peak bytes of a forward + backward pass.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/attention/attention.h"
#include "layers/attention/positional.h"
#include "tests/autograd/grad_checks.h"

namespace relpos::test {

// Options from key/value pairs, e.g. options("attention", {{"type", "linear"}, {"nu", "2"}}).
Options options(const std::string& where,
                const std::vector<std::pair<std::string, std::string>>& values);

// AttentionOptions for `heads` heads of size `head_dim`, f64, a fixed generator.
AttentionOptions attention_options(const Options& opt, int64_t heads, int64_t head_dim,
                                   int64_t max_len = 0, DType dtype = DType::f64);

// u8 [B, Lk]: row b has its last `pad[b]` keys padded (0), the rest real (1).
Tensor padding_mask(int64_t k_len, const std::vector<int64_t>& pad);

// Whether key j is blocked for query i of batch row b (padding; causality aligned at the ends;
// the causal window), from the definition in AttentionInputs.
class NaiveMask {
 public:
  NaiveMask(const AttentionInputs& in, int64_t q_len, int64_t k_len);
  bool blocked(int64_t b, int64_t i, int64_t j) const;

 private:
  std::vector<uint8_t> keep_;  // [B, Lk], empty: no padding
  bool causal_;
  int64_t window_, q_len_, k_len_;
};

// softmax(scores / sqrt(D) over unblocked keys) · V by explicit loops, f64 on the CPU; a query
// with every key blocked gets zeros.
// scores: [B, H, Lq, Lk] already holding Q·Kᵀ (+ any bias S); v: [B, H, Lk, Dv].
Tensor naive_softmax_from_scores(const Tensor& scores, const Tensor& v, const AttentionInputs& in,
                                 int64_t head_dim);

// Q·Kᵀ by explicit loops: [B, H, Lq, D] x [B, H, Lk, D] -> [B, H, Lq, Lk].
Tensor naive_scores(const Tensor& q, const Tensor& k);

// Seed 004's s_{i+t}: query row i of q [Lq, dim] (flat) · the skew embedding of relative shift t,
// stored in column t3 - 1 - t of e [dim, 2 t3 - 1] (flat).
double skew_shifted_score(const std::vector<double>& q, const std::vector<double>& e, int64_t dim,
                          int64_t t3, int64_t i, int64_t t);
// The skew score bias by loops: S[b, h, i, j] = s_{p + (j - p)} with query i at position
// p = i + offset, so key j is the shift t = j - p. q [B, H, Lq, D], e [D, 2 t3 - 1].
Tensor naive_skew_scores(const Tensor& q, const Tensor& e, int64_t k_len, int64_t offset = 0);

// A variant that only reports the given caps (forward returns q), for an encoding's check_host.
class TestHost final : public Attention {
 public:
  explicit TestHost(AttentionCaps caps) : caps_(caps) {}
  Var forward(const Var& q, const Var&, const Var&, const AttentionInputs&) override { return q; }
  AttentionCaps caps() const override { return caps_; }
  std::string name() const override { return "test_host"; }

 private:
  AttentionCaps caps_;
};

// S [B, H, Lq, Lk] for q [B, H, Lq, D], Lk keys and query 0 at position `offset`.
using NaiveBias = std::function<Tensor(const Tensor& q, int64_t k_len, int64_t offset)>;

// softmax attention hosting `positional` equals naive softmax over Q·Kᵀ + naive_bias(q, Lk,
// offset) (explicit loops, f64), for each (Lq, Lk), causal (when Lq <= Lk: queries after a
// memory) and not, padded and not. B = 2, H = 3, D = 5, Dv = 4; the encoding must be built for H
// heads of size D.
void check_softmax_with_score_bias(Positional& positional, const NaiveBias& naive_bias,
                                   const std::vector<std::pair<int64_t, int64_t>>& lengths);

// Peak bytes the device allocator holds above its level before `step` (forward + backward).
int64_t peak_bytes_of(Device device, const std::function<void()>& step);

}  // namespace relpos::test
