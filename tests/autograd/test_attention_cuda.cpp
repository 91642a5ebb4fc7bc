// The fused attention op on CUDA (core/cuda/attention_kernels.cuh, and the composed path for head
// sizes past the tiles) against the CPU kernel, which test_grad_attention.cpp holds to the naive
// formula: output, log-sum-exp and every input gradient, f32 and f64, over padding x causal x
// window x dropout, with and without the position term, at sizes on both sides of the 64-row tiles,
// Lq != Lk both ways, every instantiated head size (32, 64, 128) and logits large enough to stress
// the running maximum; and peak device memory of forward + backward that grows linearly in L. Every
// case skips visibly without a GPU.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/allocator.h"
#include "tests/attention_cases.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

struct Sizes {
  int64_t batch, heads, q_len, k_len, dim, value_dim;
};

bool skip_without_gpu(const char* what) {
  if (cuda_available()) return false;
  MESSAGE("SKIPPED (no CUDA device): " << std::string(what));  // a char* prints as a pointer
  return true;
}

// {out, lse, dq, dk, dv} of the core op on inputs {q, k, v, gout[, key_mask]}.
std::vector<Tensor> forward_backward(const std::vector<Tensor>& in, AttentionSpec spec) {
  if (in.size() > 4) spec.key_mask = in[4];
  const AttentionResult r = attention(in[0], in[1], in[2], spec);
  const AttentionGrads g = attention_backward(in[3], in[0], in[1], in[2], r, spec);
  return {r.out, r.lse, g.dq, g.dk, g.dv};
}

void check_matches_cpu(const Sizes& s, DType dtype, bool padding, int64_t window, double dropout,
                       double range) {
  AttentionSpec spec;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(s.dim));
  spec.causal = window >= 0;
  spec.window = std::max<int64_t>(window, 0);
  spec.dropout = dropout;
  spec.seed = 99;
  spec.offset = 7;
  std::vector<Tensor> in = {
      test::random_tensor({s.batch, s.heads, s.q_len, s.dim}, dtype, 1, -range, range),
      test::random_tensor({s.batch, s.heads, s.k_len, s.dim}, dtype, 2, -range, range),
      test::random_tensor({s.batch, s.heads, s.k_len, s.value_dim}, dtype, 3),
      test::random_tensor({s.batch, s.heads, s.q_len, s.value_dim}, dtype, 4)};
  if (padding) in.push_back(test::attention_padding_mask(s.batch, s.k_len, 5));
  const std::string what = fmt::format(
      "attention {} B {} H {} Lq {} Lk {} D {} Dv {}, padding {}, causal {}, window {}, dropout "
      "{}, inputs in ±{}",
      dtype == DType::f64 ? "f64" : "f32", s.batch, s.heads, s.q_len, s.k_len, s.dim, s.value_dim,
      padding, spec.causal, spec.window, dropout, range);
  const double tol = dtype == DType::f64 ? 1e-10 : 1e-5;
  test::check_cuda_matches_cpu(
      what, [&spec](const std::vector<Tensor>& x) { return forward_backward(x, spec); }, in, tol,
      tol / 10);
}

// {out, lse, dq, dk, dv, d rel_query, d rel_key} of the core op on inputs {q, k, v, gout,
// rel_query, rel_key[, key_mask]}.
std::vector<Tensor> with_position_term(const std::vector<Tensor>& in, AttentionSpec spec) {
  spec.rel_query = in[4];
  spec.rel_key = in[5];
  if (in.size() > 6) spec.key_mask = in[6];
  const AttentionResult r = attention(in[0], in[1], in[2], spec);
  const AttentionGrads g = attention_backward(in[3], in[0], in[1], in[2], r, spec);
  return {r.out, r.lse, g.dq, g.dk, g.dv, g.drel_query, g.drel_key};
}

void check_position_term_matches_cpu(const Sizes& s, DType dtype, bool padding, int64_t window,
                                     const test::RelPlacement& t, double range) {
  AttentionSpec spec;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(s.dim));
  spec.causal = window >= 0;
  spec.window = std::max<int64_t>(window, 0);
  spec.dropout = padding ? 0.3 : 0.0;
  spec.seed = 99;
  spec.offset = 7;
  spec.rel_offset = t.offset;
  spec.rel_min = t.min;
  spec.rel_max = t.max;
  std::vector<Tensor> in = {
      test::random_tensor({s.batch, s.heads, s.q_len, s.dim}, dtype, 1, -range, range),
      test::random_tensor({s.batch, s.heads, s.k_len, s.dim}, dtype, 2, -range, range),
      test::random_tensor({s.batch, s.heads, s.k_len, s.value_dim}, dtype, 3),
      test::random_tensor({s.batch, s.heads, s.q_len, s.value_dim}, dtype, 4),
      test::random_tensor({s.batch, s.heads, s.q_len, t.dim}, dtype, 5, -range, range),
      test::random_tensor({t.tables, t.max - t.min + 1, t.dim}, dtype, 6, -range, range)};
  if (padding) in.push_back(test::attention_padding_mask(s.batch, s.k_len, 5));
  const std::string what = fmt::format(
      "attention with the position term {} B {} H {} Lq {} Lk {} D {} Dv {}, padding and dropout "
      "{}, window {} (-1: not causal), offset {} rows [{}, {}] x {} tables of width {}, inputs in "
      "±{}",
      dtype == DType::f64 ? "f64" : "f32", s.batch, s.heads, s.q_len, s.k_len, s.dim, s.value_dim,
      padding, window, t.offset, t.min, t.max, t.tables, t.dim, range);
  const double tol = dtype == DType::f64 ? 1e-10 : 2e-5;
  test::check_cuda_matches_cpu(
      what, [&spec](const std::vector<Tensor>& x) { return with_position_term(x, spec); }, in, tol,
      tol / 10);
}

}  // namespace

TEST_CASE("attention on CUDA equals the CPU kernel: the position term, tiled and composed") {
  if (skip_without_gpu("attention CUDA == CPU with the position term")) return;
  // f64 up to width 32 and f32 up to 64 take the tiles; the widths past them the composed form.
  // Large logits (inputs in ±4: logits in the hundreds) in f64 only: there a weight's f32 rounding
  // is |logit| 2^-24 relative, and two summation orders differ by more than f32's 2e-5 (the
  // H200 measured 2e-6 to 5e-6 absolute at head size 64), as in the f32 case without the term.
  const std::vector<std::pair<Sizes, DType>> cases = {
      {{2, 3, 37, 37, 5, 7}, DType::f64},    {{1, 2, 70, 200, 4, 3}, DType::f64},
      {{2, 1, 130, 200, 30, 2}, DType::f64}, {{1, 1, 65, 66, 40, 10}, DType::f64},
      {{1, 2, 96, 160, 64, 64}, DType::f32}, {{2, 1, 129, 300, 20, 30}, DType::f32},
      {{1, 1, 40, 90, 100, 20}, DType::f32},
  };
  for (const auto& [s, dtype] : cases)
    for (const auto& [term, window] :
         test::rel_placements(s.q_len, s.k_len, s.heads, std::min<int64_t>(s.dim + 2, 64)))
      for (const bool padding : {false, true})
        for (const double range : {1.0, 4.0})
          if (dtype == DType::f64 || range == 1.0)
            check_position_term_matches_cpu(s, dtype, padding, window, term, range);
}

TEST_CASE("attention on CUDA equals the CPU kernel: f64, every mask, large logits") {
  if (skip_without_gpu("attention CUDA == CPU, f64")) return;
  const std::vector<Sizes> sizes = {
      {1, 1, 1, 1, 1, 1},     {2, 3, 37, 37, 5, 7},    {1, 2, 70, 200, 4, 3},
      {2, 1, 130, 45, 6, 2},  {1, 2, 129, 129, 33, 8}, {3, 1, 64, 128, 64, 64},
      {1, 1, 65, 66, 70, 10},  // past the f64 tiles: the composed path
  };
  for (const Sizes& s : sizes)
    for (const bool padding : {false, true})
      for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})  // -1: not causal
        for (const double dropout : {0.0, 0.3})
          for (const double range : {1.0, 12.0})
            check_matches_cpu(s, DType::f64, padding, window, dropout, range);
}

TEST_CASE("attention on CUDA equals the CPU kernel: f32, every head size") {
  if (skip_without_gpu("attention CUDA == CPU, f32")) return;
  const std::vector<Sizes> sizes = {
      {2, 3, 37, 37, 5, 7},       {1, 2, 70, 200, 32, 32},  {2, 1, 130, 45, 64, 48},
      {1, 2, 129, 300, 100, 128}, {1, 1, 256, 256, 64, 64}, {1, 1, 40, 90, 130, 20},
  };
  for (const Sizes& s : sizes)
    for (const bool padding : {false, true})
      for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})
        for (const double dropout : {0.0, 0.3})
          check_matches_cpu(s, DType::f32, padding, window, dropout, 1.0);
}

TEST_CASE("attention on CUDA: peak device memory of forward + backward grows linearly in L") {
  if (skip_without_gpu("attention CUDA memory")) return;
  const Device gpu = Device::cuda(0);
  // Plain, causal, and causal with Transformer-XL's position term (a table per head).
  const auto peak_at = [&gpu](int64_t n, bool causal, bool position) {
    std::vector<Tensor> in;
    for (uint64_t seed = 1; seed <= 4; ++seed)
      in.push_back(test::random_tensor({1, 8, n, 32}, DType::f32, seed).to(gpu));
    AttentionSpec spec;
    spec.scale = 0.25;
    spec.causal = causal;
    spec.dropout = 0.1;
    if (position) {
      in.push_back(test::random_tensor({1, 8, n, 32}, DType::f32, 5).to(gpu));
      in.push_back(test::random_tensor({8, n, 32}, DType::f32, 6).to(gpu));
      spec.rel_max = n - 1;
    }
    synchronize(gpu);
    const int64_t before = memory_stats(gpu).current_bytes;
    reset_peak_memory(gpu);
    if (position)
      with_position_term(in, spec);
    else
      forward_backward(in, spec);
    synchronize(gpu);
    return memory_stats(gpu).peak_bytes - before;
  };
  for (const auto& [causal, position] : {std::pair{false, false}, {true, false}, {true, true}}) {
    const int64_t small = peak_at(1024, causal, position), large = peak_at(16384, causal, position);
    RELPOS_INFO("causal {}, position term {}: peak {} bytes at L 1024, {} at 16384", causal,
                position, small, large);
    CHECK(static_cast<double>(large) / static_cast<double>(small) < 17);
    CHECK(large < (int64_t{320} << 20));  // the scores alone would be 8 x 16384² x 4 bytes = 8 GiB
  }
}
