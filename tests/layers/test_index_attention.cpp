// IndexAttention (ISDPA) against standard multi-head attention over f = F[ids] + P written with
// explicit loops (odd lengths, padding, causal), its positions against the seed's generator, the
// frozen padding row, f64 gradchecks, refusals and CPU ≡ CUDA; StackedHeads against its formula.
#include <cmath>
#include <string>
#include <vector>

#include "layers/attention/index_attention.h"
#include "layers/attention/stacked_heads.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

IndexAttentionConfig config(int64_t vocab, int64_t dim, int64_t heads, int64_t max_len,
                            Generator& gen, DType dtype = f64) {
  return IndexAttentionConfig{vocab, dim, heads, max_len, dtype, &gen};
}

// The seed's generate_position_embeddings: frequencies 1, r, r², … with r = 1e4^(-1/(d/2)),
// P[pos, 2c] = sin(pos f_c), P[pos, 2c + 1] = cos(pos f_c).
std::vector<double> seed_positions(int64_t len, int64_t dim) {
  std::vector<double> freq(dim / 2, 1.0);
  for (int64_t c = 1; c < dim / 2; ++c) freq[c] = freq[c - 1] * std::pow(1e4, -1.0 / (dim / 2));
  std::vector<double> p(len * dim);
  for (int64_t pos = 0; pos < len; ++pos)
    for (int64_t c = 0; c < dim / 2; ++c) {
      p[pos * dim + 2 * c] = std::sin(static_cast<double>(pos) * freq[c]);
      p[pos * dim + 2 * c + 1] = std::cos(static_cast<double>(pos) * freq[c]);
    }
  return p;
}

// Standard multi-head attention by loops: f = F[ids] + P, Q = f W_qᵀ (K, V alike), heads split
// the d columns; scores per head, then the naive softmax. Returns [B, H, L, Dh].
Tensor naive_isdpa(IndexAttention& m, const Tensor& ids, const AttentionInputs& in) {
  const int64_t B = ids.size(0), L = ids.size(1), H = m.num_heads(), Dh = m.head_dim();
  const int64_t d = H * Dh;
  const auto id = ids.to_vector<int64_t>();
  const auto F = m.embedding().weight().value().to_vector<double>();
  const auto P = seed_positions(L, d);
  std::vector<std::vector<double>> proj;  // Q, K, V: [B, L, d]
  for (Linear* lin : {&m.q_proj(), &m.k_proj(), &m.v_proj()}) {
    const auto W = lin->weight().value().to_vector<double>();
    std::vector<double> out(B * L * d, 0.0);
    for (int64_t t = 0; t < B * L; ++t)
      for (int64_t o = 0; o < d; ++o)
        for (int64_t c = 0; c < d; ++c)
          out[t * d + o] += W[o * d + c] * (F[id[t] * d + c] + P[(t % L) * d + c]);
    proj.push_back(out);
  }
  std::vector<double> scores(B * H * L * L, 0.0), values(B * H * L * Dh);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t e = 0; e < Dh; ++e)
          values[((b * H + h) * L + i) * Dh + e] = proj[2][(b * L + i) * d + h * Dh + e];
        for (int64_t j = 0; j < L; ++j)
          for (int64_t e = 0; e < Dh; ++e)
            scores[((b * H + h) * L + i) * L + j] +=
                proj[0][(b * L + i) * d + h * Dh + e] * proj[1][(b * L + j) * d + h * Dh + e];
      }
  return test::naive_softmax_from_scores(Tensor::from_vector(scores, {B, H, L, L}),
                                         Tensor::from_vector(values, {B, H, L, Dh}), in, Dh);
}

// ids [B, L] in [1, vocab), with the last pad[b] positions of row b set to the padding id 0.
Tensor token_ids(int64_t len, int64_t vocab, const std::vector<int64_t>& pad, uint64_t seed) {
  const int64_t B = static_cast<int64_t>(pad.size());
  auto id = test::random_indices({B, len}, vocab - 1, seed).to_vector<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < len; ++j) id[b * len + j] = j < len - pad[b] ? id[b * len + j] + 1 : 0;
  return Tensor::from_vector(id, {B, len});
}

}  // namespace

// f64 against f64 loops that project every token: only the summation order differs, 1e-10.
TEST_CASE("index attention: equals multi-head attention over F[ids] + P, odd L, padding, causal") {
  Generator gen(1);
  IndexAttention m(config(7, 6, 2, 9, gen));
  for (int64_t len : {5, 9}) {
    for (bool causal : {false, true}) {
      for (bool masked : {false, true}) {
        INFO("L " << len << " causal " << causal << " masked " << masked);
        const std::vector<int64_t> pad =
            masked ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{0, 0};
        const Tensor ids = token_ids(len, 7, pad, 2 + len);
        AttentionInputs in;
        in.causal = causal;
        if (masked) in.key_mask = test::padding_mask(len, pad);
        const Tensor got = m.heads(ids, in.key_mask, causal).value();
        CHECK_CLOSE(got, naive_isdpa(m, ids, in), 1e-10, 1e-10);
        // forward concatenates the heads: [B, L, H*Dh] entry h*Dh + e is head h's entry e.
        const Tensor merged = m.forward(ids, in.key_mask, causal).value();
        CHECK(merged.shape() == Shape{2, len, 6});
        CHECK_CLOSE(merged, got.permute({0, 2, 1, 3}).contiguous().reshape({2, len, 6}), 0, 0);
      }
    }
  }
}

TEST_CASE("index attention: P is the seed's generator; names; padding row zero and frozen") {
  Generator gen(3);
  IndexAttention m(config(5, 8, 2, 11, gen));
  CHECK_CLOSE(m.positions(), Tensor::from_vector(seed_positions(11, 8), {11, 8}), 1e-12, 1e-12);
  std::vector<std::string> names;
  for (const auto& [n, p] : m.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"embedding.weight", "q_proj.weight", "k_proj.weight",
                                          "v_proj.weight"});
  CHECK(m.named_buffers().at(0).first == "pe");
  CHECK(m.q_proj().weight().shape() == Shape{8, 8});
  CHECK_FALSE(m.q_proj().bias().defined());
  const Tensor row0 = m.embedding().weight().value().select(0, 0);
  CHECK(row0.to_vector<double>() == std::vector<double>(8, 0.0));
  // Id 0 used as a token: row 0 still gets no gradient (nn.Embedding(padding_idx=0)), row 1 does.
  const Tensor ids = Tensor::from_vector<int64_t>({1, 0, 3, 0, 2, 1}, {2, 3});
  sum(m.forward(ids, {}, true)).backward();
  const Tensor g = m.embedding().weight().grad();
  CHECK(g.select(0, 0).to_vector<double>() == std::vector<double>(8, 0.0));
  CHECK(max(abs(g.select(0, 1))).item() > 0);
}

// Default gradcheck tolerances (eps 1e-6, atol 1e-6, rtol 1e-4): smooth in F and the W's. Ids
// avoid the padding id, whose row is frozen by design (its gradient is not the derivative).
TEST_CASE("index attention: gradcheck (f64) w.r.t. F and W_q, W_k, W_v, padded and causal") {
  Generator gen(4);
  IndexAttention m(config(6, 4, 2, 7, gen));
  const Tensor ids = token_ids(5, 6, {0, 0}, 5);
  const Tensor mask = test::padding_mask(5, {0, 2});
  test::check_grad(
      [&](const std::vector<Var>& x) {
        m.embedding().weight() = x[0];
        m.q_proj().weight() = x[1];
        m.k_proj().weight() = x[2];
        m.v_proj().weight() = x[3];
        return m.forward(ids, mask, true);
      },
      {test::random_tensor({6, 4}, f64, 6), test::random_tensor({4, 4}, f64, 7),
       test::random_tensor({4, 4}, f64, 8), test::random_tensor({4, 4}, f64, 9)});
}

TEST_CASE("index attention: refuses ids out of range, L > max_len, bad shapes, saying why") {
  Generator gen(10);
  IndexAttention m(config(5, 4, 2, 6, gen));
  CHECK_THROWS_WITH_AS(m.forward(Tensor::from_vector<int64_t>({1, 5, 2}, {1, 3})),
                       "[IndexAttention] token ids must be in [0, vocab = 5), got ids from 1 to 5",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(Tensor::from_vector<int64_t>({-1, 4}, {1, 2})),
                       "[IndexAttention] token ids must be in [0, vocab = 5), got ids from -1 to 4",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(token_ids(7, 5, {0}, 11)),
                       "[IndexAttention] sequence length 7 exceeds max_len 6", Error);
  CHECK_THROWS_WITH_AS(m.forward(token_ids(3, 5, {0}, 12), test::padding_mask(4, {0})),
                       "[IndexAttention] key_mask must be u8 shaped like ids i64[1, 3] cpu on its "
                       "device, got u8[1, 4] cpu",
                       Error);
  CHECK_THROWS_WITH_AS(IndexAttention(config(5, 6, 4, 6, gen)),
                       "[IndexAttention] model_dim 6 must be a positive multiple of num_heads 4",
                       Error);
}

TEST_CASE("index attention: CUDA matches CPU") {
  const Tensor ids = token_ids(37, 11, {0, 5}, 13);
  const Tensor mask = test::padding_mask(37, {0, 5});
  // Embeddings in [-0.5, 0.5] keep the f32 logits small, so rtol 1e-5 holds.
  const Tensor F = test::random_tensor({11, 16}, DType::f32, 14, -0.5, 0.5);
  test::check_cuda_matches_cpu("index attention",
                               [](const std::vector<Tensor>& x) {
                                 Generator gen(15);  // the same parameters on both devices
                                 IndexAttention m(config(11, 16, 4, 40, gen, DType::f32));
                                 m.to(x[0].device());
                                 m.embedding().weight() = Var(x[2]);
                                 return std::vector<Tensor>{m.forward(x[0], x[1], true).value()};
                               },
                               {ids, mask, F});
}

// f64 against f64 loops, 1e-12: the same products summed in another order.
TEST_CASE("stacked heads: tanh(tanh(Stack(heads) W_Hᵀ) W_Oᵀ) by loops; names; gradcheck") {
  Generator gen(16);
  StackedHeads s(StackedHeadsConfig{3, 6, 2, f64, &gen});
  std::vector<std::string> names;
  for (const auto& [n, p] : s.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"w_h.weight", "w_o.weight"});
  CHECK(s.w_h().weight().shape() == Shape{6, 3});
  CHECK(s.w_o().weight().shape() == Shape{2, 6});

  const int64_t B = 2, H = 3, L = 5, Dh = 4, N = 6, O = 2;
  const Tensor heads = test::random_tensor({B, H, L, Dh}, f64, 17, -2, 2);
  const auto x = heads.to_vector<double>();
  const auto wh = s.w_h().weight().value().to_vector<double>();
  const auto wo = s.w_o().weight().value().to_vector<double>();
  std::vector<double> want(B * L * Dh * O);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < Dh; ++e)
        for (int64_t o = 0; o < O; ++o) {
          double acc = 0;
          for (int64_t n = 0; n < N; ++n) {
            double hidden = 0;
            for (int64_t h = 0; h < H; ++h)
              hidden += wh[n * H + h] * x[((b * H + h) * L + l) * Dh + e];
            acc += wo[o * N + n] * std::tanh(hidden);
          }
          want[((b * L + l) * Dh + e) * O + o] = std::tanh(acc);
        }
  CHECK_CLOSE(s.forward(Var(heads)).value(), Tensor::from_vector(want, {B, L, Dh * O}), 1e-12,
              1e-12);

  // Default gradcheck tolerances: tanh is smooth.
  test::check_grad(
      [&](const std::vector<Var>& v) {
        s.w_h().weight() = v[1];
        s.w_o().weight() = v[2];
        return s.forward(v[0]);
      },
      {heads, test::random_tensor({N, H}, f64, 18), test::random_tensor({O, N}, f64, 19)});
  CHECK_THROWS_WITH_AS(s.forward(Var(test::random_tensor({2, 4, 5, 3}, f64, 20))),
                       "[StackedHeads] expects heads [batch, 3, length, head_dim], got "
                       "f64[2, 4, 5, 3] cpu",
                       Error);
}

TEST_CASE("stacked heads: CUDA matches CPU") {
  test::check_cuda_matches_cpu("stacked heads",
                               [](const std::vector<Tensor>& x) {
                                 Generator gen(21);
                                 StackedHeads s(StackedHeadsConfig{4, 16, 1, DType::f32, &gen});
                                 s.to(x[0].device());
                                 return std::vector<Tensor>{s.forward(Var(x[0])).value()};
                               },
                               {test::random_tensor({2, 4, 33, 8}, DType::f32, 22)});
}
