// The fused attention op (autograd/functions/attention.cpp over core/cpu/attention.cpp) against
// its naive twin written here from matmul, a masked softmax, dropout and matmul: the output and
// every input gradient in f64, over padding x causal x window x dropout, at sizes on both sides of
// the CPU tiles (128 query rows, 256 keys), Lq != Lk both ways, and logits in the hundreds that a
// running maximum must survive; the same for Transformer-XL's position term against it written
// out; gradchecks; an example's output independent of its batch; clear errors; and peak memory
// (counted by the allocator) that grows linearly in L.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/allocator.h"
#include "tests/attention_cases.h"
#include "tests/autograd/grad_checks.h"

using namespace relpos;

namespace {

struct Sizes {
  int64_t batch, heads, q_len, k_len, dim, value_dim;
};

struct Masking {
  bool padding = false;
  bool causal = false;
  int64_t window = 0;
  double dropout = 0;
};

// u8 [B, 1, Lq, Lk], 1 where the pair is blocked, written from the rules of core/ops.h
// AttentionSpec: padding keys; causal keys after the query (ends aligned); keys `window` or more
// positions before it.
Tensor blocked_pairs(const AttentionSpec& spec, int64_t batch, int64_t q_len, int64_t k_len) {
  Tensor blocked = zeros({batch, 1, q_len, k_len}, DType::u8);
  uint8_t* out = blocked.data<uint8_t>();
  const uint8_t* keys = spec.key_mask.defined() ? spec.key_mask.data<uint8_t>() : nullptr;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < q_len; ++i)
      for (int64_t j = 0; j < k_len; ++j) {
        const int64_t at = i + k_len - q_len;  // the query's position among the keys
        const bool padded = keys != nullptr && keys[b * k_len + j] == 0;
        const bool future = spec.causal && j > at;
        const bool too_old = spec.causal && spec.window > 0 && j <= at - spec.window;
        out[(b * q_len + i) * k_len + j] = padded || future || too_old;
      }
  return blocked;
}

// softmax(scale q·kᵀ) over the visible pairs (blocked ones weigh 0; a row with none is all 0),
// dropout from Generator(seed), times v.
Var naive_attention(const Var& q, const Var& k, const Var& v, const AttentionSpec& spec,
                    uint64_t seed, const Var& bias = Var()) {
  const Tensor blocked = blocked_pairs(spec, q.size(0), q.size(2), k.size(2)).to(q.device());
  Var logits = matmul(q, k, false, true);
  if (bias.defined()) logits = logits + bias;
  const Var scores = masked_fill(logits * spec.scale, blocked, -1e30);
  Var weights = masked_fill(softmax(scores, -1), blocked, 0.0);
  Generator gen(seed);
  weights = dropout(weights, spec.dropout, gen, true);
  return matmul(weights, v);
}

AttentionSpec spec_of(const Sizes& s, const Masking& m, uint64_t seed) {
  AttentionSpec spec;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(s.dim));
  if (m.padding) spec.key_mask = test::attention_padding_mask(s.batch, s.k_len, seed);
  spec.causal = m.causal;
  spec.window = m.window;
  spec.dropout = m.dropout;
  return spec;
}

// {output, the gradient of each input} of f after backward from a fixed output gradient.
std::vector<Tensor> run(const std::function<Var(const std::vector<Var>&)>& f,
                        const std::vector<Tensor>& inputs) {
  std::vector<Var> vars;
  for (const Tensor& x : inputs) vars.emplace_back(x, true);
  const Var y = f(vars);
  y.backward(test::random_tensor(y.shape(), y.dtype(), 4242));
  std::vector<Tensor> out{y.value()};
  for (const Var& x : vars) out.push_back(x.grad());
  return out;
}

// The fused and the naive results, named in order, agree to f64 rounding.
void check_agree(const std::vector<Tensor>& fused, const std::vector<Tensor>& naive,
                 const std::vector<const char*>& names) {
  REQUIRE(fused.size() == names.size());
  REQUIRE(naive.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK_CLOSE(fused[i], naive[i], 1e-9, 1e-10);
  }
}

void check_fused_matches_naive(const Sizes& s, const Masking& m, double input_range) {
  const uint64_t seed = 17;
  const Tensor q = test::random_tensor({s.batch, s.heads, s.q_len, s.dim}, DType::f64, 1,
                                       -input_range, input_range);
  const Tensor k = test::random_tensor({s.batch, s.heads, s.k_len, s.dim}, DType::f64, 2,
                                       -input_range, input_range);
  const Tensor v = test::random_tensor({s.batch, s.heads, s.k_len, s.value_dim}, DType::f64, 3);
  const AttentionSpec spec = spec_of(s, m, seed);
  const auto fused = run(
      [&](const std::vector<Var>& x) {
        Generator gen(seed);
        return attention(x[0], x[1], x[2], spec, gen, true);
      },
      {q, k, v});
  const auto naive =
      run([&](const std::vector<Var>& x) { return naive_attention(x[0], x[1], x[2], spec, seed); },
          {q, k, v});
  check_agree(fused, naive, {"output", "dq", "dk", "dv"});
}

}  // namespace

TEST_CASE("attention: the fused op equals softmax, dropout and matmul composed, f64, every mask") {
  const std::vector<Sizes> sizes = {
      {1, 1, 1, 1, 1, 1},    {2, 3, 37, 37, 5, 7},   {1, 2, 70, 200, 4, 3},
      {2, 1, 130, 45, 6, 2}, {1, 2, 129, 129, 8, 8}, {3, 1, 64, 128, 3, 5},
  };
  for (const Sizes& s : sizes)
    for (const bool padding : {false, true})
      for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})  // -1: not causal
        for (const double dropout : {0.0, 0.3}) {
          const Masking m{padding, window >= 0, std::max<int64_t>(window, 0), dropout};
          INFO(
              fmt::format("B {} H {} Lq {} Lk {} D {} Dv {}, padding {}, causal {}, window {}, "
                          "dropout {}",
                          s.batch, s.heads, s.q_len, s.k_len, s.dim, s.value_dim, padding, m.causal,
                          m.window, dropout));
          check_fused_matches_naive(s, m, 1.0);
          check_fused_matches_naive(s, m, 12.0);  // logits up to ~|144 D| / sqrt(D)
        }
}

namespace {

// A relative position term's placement (core/ops.h AttentionSpec::rel_*) and table count.
struct RelTerm {
  int64_t offset, min, max;
  int64_t tables;  // 1 or H
};

// The position term written out: bias[b, h, i, j] = rel_query[b, h, i]·rel_key[h or 0, row],
// row = clamp(i + offset - j, min, max) - min.
Var naive_position_term(const Var& rel_query, const Var& rel_key, int64_t k_len, const RelTerm& t) {
  const int64_t B = rel_query.size(0), H = rel_query.size(1), Lq = rel_query.size(2);
  const Var all = matmul(rel_query, unsqueeze(rel_key, 0), false, true);  // [B, H, Lq, rows]
  Tensor index = Tensor::empty({B, H, Lq, k_len}, DType::i64);
  int64_t* at = index.data<int64_t>();
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < k_len; ++j)
        *at++ = std::clamp(i + t.offset - j, t.min, t.max) - t.min;
  return gather(all, 3, index);
}

void check_position_term_matches_naive(const Sizes& s, const Masking& m, const RelTerm& t,
                                       int64_t rel_dim, double range) {
  const uint64_t seed = 23;
  const auto input = [&](const Shape& shape, uint64_t id) {
    return test::random_tensor(shape, DType::f64, id, -range, range);
  };
  const std::vector<Tensor> x = {
      input({s.batch, s.heads, s.q_len, s.dim}, 1), input({s.batch, s.heads, s.k_len, s.dim}, 2),
      test::random_tensor({s.batch, s.heads, s.k_len, s.value_dim}, DType::f64, 3),
      input({s.batch, s.heads, s.q_len, rel_dim}, 4),
      input({t.tables, t.max - t.min + 1, rel_dim}, 5)};
  AttentionSpec spec = spec_of(s, m, seed);
  spec.rel_offset = t.offset;
  spec.rel_min = t.min;
  spec.rel_max = t.max;
  const auto fused = run(
      [&](const std::vector<Var>& v) {
        Generator gen(seed);
        return attention(v[0], v[1], v[2], v[3], v[4], spec, gen, true);
      },
      x);
  const auto naive = run(
      [&](const std::vector<Var>& v) {
        return naive_attention(v[0], v[1], v[2], spec, seed,
                               naive_position_term(v[3], v[4], s.k_len, t));
      },
      x);
  check_agree(fused, naive, {"output", "dq", "dk", "dv", "d rel_query", "d rel_key"});
}

}  // namespace

// Placements as the layers use them: Transformer-XL's (causal, a table per head over the
// distances 0..Lk-1), Shaw's (one table, distances clipped to [-3, 3]) and skew's (one table over
// every distance, nothing clipped), with and without causality.
TEST_CASE("attention: the position term inside the tiles equals it written out, f64") {
  const std::vector<Sizes> sizes = {
      {1, 1, 1, 1, 1, 1},     {2, 3, 37, 37, 5, 7},   {1, 2, 70, 200, 4, 3},
      {2, 1, 130, 300, 6, 2}, {1, 2, 129, 129, 8, 8},
  };
  for (const Sizes& s : sizes) {
    const int64_t shift = s.k_len - s.q_len;
    const std::vector<std::pair<RelTerm, bool>> terms = {
        // {term, causal}
        {{shift, 0, s.k_len - 1, s.heads}, true},
        {{shift, -3, 3, 1}, false},
        {{shift, -3, 3, 1}, true},
        {{0, -(s.k_len - 1), s.q_len - 1, 1}, false}};
    for (const auto& [term, causal] : terms)
      for (const bool padding : {false, true})
        for (const double dropout : {0.0, 0.3}) {
          const Masking m{padding, causal, causal ? int64_t{17} : int64_t{0}, dropout};
          RELPOS_INFO(
              "B {} H {} Lq {} Lk {} D {} Dv {}, term offset {} rows [{}, {}] x {}, padding {}, "
              "causal {}, dropout {}",
              s.batch, s.heads, s.q_len, s.k_len, s.dim, s.value_dim, term.offset, term.min,
              term.max, term.tables, padding, causal, dropout);
          check_position_term_matches_naive(s, m, term, s.dim + 2, 1.0);
          check_position_term_matches_naive(s, m, term, 3, 8.0);  // logits in the hundreds
        }
  }
}

TEST_CASE("attention: gradcheck with the position term, padding, a window and dropout (f64)") {
  const Sizes s{2, 2, 7, 11, 3, 4};
  const AttentionSpec spec = spec_of(s, {true, true, 6, 0.25}, 5);
  test::check_grad(
      [spec](const std::vector<Var>& x) {
        Generator gen(9);
        AttentionSpec clipped = spec;  // distances -3..3 around query i at position i + 4
        clipped.rel_offset = 4;
        clipped.rel_min = -3;
        clipped.rel_max = 3;
        return attention(x[0], x[1], x[2], x[3], x[4], clipped, gen, true);
      },
      {test::random_tensor({2, 2, 7, 3}, DType::f64, 1),
       test::random_tensor({2, 2, 11, 3}, DType::f64, 2),
       test::random_tensor({2, 2, 11, 4}, DType::f64, 3),
       test::random_tensor({2, 2, 7, 5}, DType::f64, 4),
       test::random_tensor({2, 7, 5}, DType::f64, 5)});
}

TEST_CASE("attention: gradcheck with padding, a causal window and dropout (f64)") {
  const Sizes s{2, 2, 9, 11, 3, 4};
  const AttentionSpec spec = spec_of(s, {true, true, 6, 0.25}, 5);
  for (const bool causal : {false, true}) {
    AttentionSpec sp = spec;
    sp.causal = causal;
    sp.window = causal ? 6 : 0;
    test::check_grad(
        [sp](const std::vector<Var>& x) {
          Generator gen(9);  // the same mask on every call
          return attention(x[0], x[1], x[2], sp, gen, true);
        },
        {test::random_tensor({2, 2, 9, 3}, DType::f64, 1),
         test::random_tensor({2, 2, 11, 3}, DType::f64, 2),
         test::random_tensor({2, 2, 11, 4}, DType::f64, 3)});
  }
}

TEST_CASE("attention: an example's output does not depend on the batch it sits in") {
  const Tensor q = test::random_tensor({3, 2, 150, 8}, DType::f32, 1, -3, 3);
  const Tensor k = test::random_tensor({3, 2, 150, 8}, DType::f32, 2, -3, 3);
  const Tensor v = test::random_tensor({3, 2, 150, 8}, DType::f32, 3);
  AttentionSpec spec;
  spec.scale = 0.35;
  spec.causal = true;
  const Tensor all = attention(q, k, v, spec).out;
  for (int64_t b = 0; b < 3; ++b) {
    const auto one = [b](const Tensor& x) { return x.slice(0, b, b + 1).contiguous(); };
    const Tensor alone = attention(one(q), one(k), one(v), spec).out;
    CHECK(alone.to_vector<float>() == one(all).to_vector<float>());
  }
}

TEST_CASE("attention: bad shapes, masks and settings are refused by name") {
  const Tensor q = zeros({1, 2, 4, 3}), k = zeros({1, 2, 5, 3}), v = zeros({1, 2, 5, 6});
  AttentionSpec spec;
  CHECK(test::error_of([&] {
          attention(q, zeros({1, 2, 5, 4}), v, spec);
        }).find("do not fit [B, H, Lq, D]") != std::string::npos);
  CHECK(test::error_of([&] {
          attention(zeros({2, 4, 3}), k, v, spec);
        }).find("must be [B, H, L, D]") != std::string::npos);
  AttentionSpec bad_mask = spec;
  bad_mask.key_mask = ones({1, 4}, DType::u8);
  CHECK(test::error_of([&] {
          attention(q, k, v, bad_mask);
        }).find("[attention] key_mask must be u8 [1, 5], got u8[1, 4]") == 0);
  AttentionSpec bad_window = spec;
  bad_window.window = 3;
  CHECK(test::error_of([&] { attention(q, k, v, bad_window); }).find("needs causal") !=
        std::string::npos);
  AttentionSpec bad_dropout = spec;
  bad_dropout.dropout = 1;
  CHECK(test::error_of([&] { attention(q, k, v, bad_dropout); }).find("dropout must be in") !=
        std::string::npos);
  CHECK(test::error_of([&] { attention(q, k, cast(v, DType::f64), spec); }).find("dtype") !=
        std::string::npos);
  AttentionSpec position = spec;
  position.rel_query = zeros({1, 2, 4, 7});
  position.rel_max = 4;
  CHECK(test::error_of([&] {
          attention(q, k, v, position);
        }).find("needs both rel_query and rel_key, got only rel_query") != std::string::npos);
  position.rel_key = zeros({2, 4, 7});
  CHECK(test::error_of([&] {
          attention(q, k, v, position);
        }).find("do not fit [B, H, Lq, R] and [H or 1, 5, R]") != std::string::npos);
  position.rel_key = zeros({3, 5, 7});
  CHECK(test::error_of([&] {
          attention(q, k, v, position);
        }).find("do not fit [B, H, Lq, R] and [H or 1, 5, R]") != std::string::npos);
  position.rel_key = zeros({1, 5, 7});
  CHECK_NOTHROW(attention(q, k, v, position));
  position.rel_min = 5;
  CHECK(test::error_of([&] {
          attention(q, k, v, position);
        }).find("rel_min 5 must be <= rel_max 4") != std::string::npos);
}

// Heads split from [B, L, H·D] projections reach the CPU kernels as views: the results have the
// bits of contiguous operands', out and the gradients come back laid out as their operands (so
// merging the heads is free), and the op allocates its results only, no copies of its operands.
TEST_CASE("attention: head-split operands give contiguous ones' bits, without copies (CPU)") {
  const int64_t B = 2, H = 3, Lq = 131, Lk = 150, D = 8, Dv = 5, R = 6, T = 40;
  // [B, L, H, W] as [B, H, L, W]: heads interleaved in each row.
  const auto split = [&](int64_t len, int64_t width, DType dt, uint64_t seed) {
    return test::random_tensor({B, len, H, width}, dt, seed, -2, 2).transpose(1, 2);
  };
  for (const DType dt : {DType::f32, DType::f64})
    for (const bool position : {false, true}) {
      INFO(dtype_name(dt) << (position ? " with the position term" : ""));
      const Tensor q = split(Lq, D, dt, 1), k = split(Lk, D, dt, 2), v = split(Lk, Dv, dt, 3);
      const Tensor gout = split(Lq, Dv, dt, 4);
      AttentionSpec spec;
      spec.scale = 0.4;
      spec.key_mask = test::attention_padding_mask(B, Lk, 5);
      spec.causal = true;  // queries at positions Lk - Lq .. Lk - 1, as with a memory
      spec.dropout = 0.2;
      spec.seed = 6;
      if (position) {
        spec.rel_query = split(Lq, R, dt, 7);
        spec.rel_key = test::random_tensor({T, H, R}, dt, 8, -2, 2).transpose(0, 1);  // [H, T, R]
        spec.rel_offset = Lk - Lq, spec.rel_min = -3, spec.rel_max = T - 4;  // clamped both ways
      }
      AttentionSpec dense = spec;
      if (position)
        dense.rel_query = spec.rel_query.contiguous(), dense.rel_key = spec.rel_key.contiguous();

      const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
      const Tensor gc_out = gout.contiguous();
      // Bytes a call allocates beyond what was live before it, at its peak.
      int64_t before = 0;
      const auto start = [&] {
        before = memory_stats(Device::cpu()).current_bytes;
        reset_peak_memory(Device::cpu());
      };
      const auto peak = [&] { return memory_stats(Device::cpu()).peak_bytes - before; };
      start();
      const AttentionResult r = attention(q, k, v, spec);
      const int64_t forward_peak = peak();
      start();
      const AttentionGrads g = attention_backward(gout, q, k, v, r, spec);
      const int64_t backward_peak = peak();
      start();
      const AttentionResult rc = attention(qc, kc, vc, dense);
      CHECK(forward_peak == peak());
      start();
      const AttentionGrads gc = attention_backward(gc_out, qc, kc, vc, rc, dense);
      CHECK(backward_peak == peak());
      for (const Tensor* t : {&r.out, &g.dq, &g.dk, &g.dv})
        CHECK(t->transpose(1, 2).is_contiguous());
      CHECK(test::same_bits(r.out, rc.out));
      CHECK(test::same_bits(r.lse, rc.lse));
      CHECK(test::same_bits(g.dq, gc.dq));
      CHECK(test::same_bits(g.dk, gc.dk));
      CHECK(test::same_bits(g.dv, gc.dv));
      if (position) {
        CHECK(g.drel_query.transpose(1, 2).is_contiguous());
        CHECK(test::same_bits(g.drel_query, gc.drel_query));
        CHECK(test::same_bits(g.drel_key, gc.drel_key));
      }
    }
}

// Forward + backward peak bytes (the allocator's count; the kernels' tile scratch is a few
// tiles per thread outside it) at L and 4L: linear growth gives 4x, the [L, L] weights 16x.
TEST_CASE("attention: peak memory of forward + backward grows linearly in L") {
  const auto peak_at = [](int64_t n, bool causal) {
    const Tensor q = test::random_tensor({1, 2, n, 16}, DType::f32, 1);
    const Tensor k = test::random_tensor({1, 2, n, 16}, DType::f32, 2);
    const Tensor v = test::random_tensor({1, 2, n, 16}, DType::f32, 3);
    const Tensor g = test::random_tensor({1, 2, n, 16}, DType::f32, 4);
    AttentionSpec spec;
    spec.scale = 0.25;
    spec.causal = causal;
    spec.dropout = 0.1;
    const int64_t before = memory_stats(Device::cpu()).current_bytes;
    reset_peak_memory(Device::cpu());
    {
      Var qv(q, true), kv(k, true), vv(v, true);
      Generator gen(1);
      attention(qv, kv, vv, spec, gen, true).backward(g);
    }
    return memory_stats(Device::cpu()).peak_bytes - before;
  };
  for (const bool causal : {false, true}) {
    const int64_t small = peak_at(1024, causal), large = peak_at(4096, causal);
    INFO(fmt::format("causal {}: peak {} bytes at L 1024, {} at 4096", causal, small, large));
    CHECK(static_cast<double>(large) / static_cast<double>(small) < 4.5);
    // The naive path's weights alone are 2 x 4096 x 4096 x 4 bytes = 128 MiB.
    CHECK(large < (int64_t{128} << 20) / 32);
  }
}
