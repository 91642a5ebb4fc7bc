// positional skew against seed 004: its worked example for t3 = 4 (Q·E, the stacked diagonals,
// their transpose, the truncation), explicit loops S[i, j] = q_i · E[:, t3 - 1 - (j - p_i)] at odd
// lengths and query positions p_i, softmax attention with it (causal after a memory, padding,
// cross attention), f64 gradcheck, memory, refusals, CPU ≡ CUDA.
#include <string>

#include "layers/attention/multi_head.h"
#include "layers/attention/skew.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

std::shared_ptr<SkewPositional> make_skew(int64_t max_len, int64_t head_dim, DType dtype = f64) {
  const Options opt =
      test::options("positional", {{"type", "skew"}, {"max_len", std::to_string(max_len)}});
  auto skew = std::dynamic_pointer_cast<SkewPositional>(
      make_positional(test::attention_options(opt, 2, head_dim, 0, dtype)));
  REQUIRE(skew != nullptr);
  return skew;
}

}  // namespace

TEST_CASE("skew: seed 004's worked example, t3 = 4: Q·E, stacked diagonals, transpose, truncate") {
  constexpr int64_t t3 = 4, D = 3, X = 99;  // X: a blank of the seed's Q·E figure
  auto skew = make_skew(t3, D);
  const Tensor q = test::random_tensor({1, 1, t3, D}, f64, 1);
  const auto qv = q.to_vector<double>(), ev = skew->weight().value().to_vector<double>();
  auto s = [&](int64_t i, int64_t t) { return test::skew_shifted_score(qv, ev, D, t3, i, t); };
  // Q·E by loops, [t3, 2 t3 - 1].
  double qe[t3][2 * t3 - 1] = {};
  for (int64_t i = 0; i < t3; ++i)
    for (int64_t c = 0; c < 2 * t3 - 1; ++c)
      for (int64_t d = 0; d < D; ++d) qe[i][c] += qv[i * D + d] * ev[d * (2 * t3 - 1) + c];
  // The figure of Q·E: entry (i, c) is s_{i + t} with t written here.
  const int64_t qe_figure[t3][2 * t3 - 1] = {{3, 2, 1, 0, X, X, X},
                                             {X, 2, 1, 0, -1, X, X},
                                             {X, X, 1, 0, -1, -2, X},
                                             {X, X, X, 0, -1, -2, -3}};
  for (int64_t i = 0; i < t3; ++i)
    for (int64_t c = 0; c < 2 * t3 - 1; ++c)
      if (qe_figure[i][c] != X) CHECK(qe[i][c] == doctest::Approx(s(i, qe_figure[i][c])));
  CHECK(qe[2][4] == doctest::Approx(s(2, -1)));  // "row 2 of Q and column 4 of E"
  // S̄: diagonal 0 of Q·E at the bottom up to diagonal t3 - 1 at the top; its figure, row r and
  // column i holding s_{i + t}.
  const int64_t bar_figure[t3][t3] = {{0, -1, -2, -3}, {1, 0, -1, -2}, {2, 1, 0, -1}, {3, 2, 1, 0}};
  double bar[t3][t3];
  for (int64_t r = 0; r < t3; ++r)
    for (int64_t i = 0; i < t3; ++i) {
      bar[r][i] = qe[i][i + (t3 - 1 - r)];
      CHECK(bar[r][i] == doctest::Approx(s(i, bar_figure[r][i])));
    }
  // S = transpose(S̄), its figure row i, column j holding s_{i + t}; the implementation gives it,
  // and truncated to Lk = 2 its first two columns.
  const int64_t s_figure[t3][t3] = {{0, 1, 2, 3}, {-1, 0, 1, 2}, {-2, -1, 0, 1}, {-3, -2, -1, 0}};
  std::vector<double> want, want_truncated;
  for (int64_t i = 0; i < t3; ++i)
    for (int64_t j = 0; j < t3; ++j) {
      CHECK(bar[j][i] == doctest::Approx(s(i, s_figure[i][j])));
      want.push_back(bar[j][i]);
      if (j < 2) want_truncated.push_back(bar[j][i]);
    }
  const AttentionInputs in{};
  CHECK_CLOSE(skew->score_bias(Var(q), t3, in).value(), Tensor::from_vector(want, {1, 1, t3, t3}),
              1e-12, 1e-12);
  CHECK_CLOSE(skew->score_bias(Var(q), 2, in).value(),
              Tensor::from_vector(want_truncated, {1, 1, t3, 2}), 1e-12, 1e-12);
}

// f64 results against f64 loops: only summation order differs (1e-12).

TEST_CASE(
    "skew: score_bias equals the loops, odd lengths, Lq != Lk, queries after a memory or from "
    "query_start, lengths below t3") {
  for (int64_t t3 : {1, 9}) {
    auto skew = make_skew(t3, 5);
    for (auto [lq, lk] : {std::pair<int64_t, int64_t>{7, 7}, {5, 9}, {9, 4}, {9, 9}, {1, 1}}) {
      for (const auto& [causal, start] : {std::pair{false, -1}, {false, 1}, {true, -1}}) {
        AttentionInputs in;
        in.causal = causal;
        in.query_start = start;
        const int64_t offset = in.query_offset(lq, lk);
        if (offset < 0 || offset + lq > t3 || lk > t3) continue;
        RELPOS_INFO("t3 {} Lq {} Lk {} query 0 at {}", t3, lq, lk, offset);
        const Tensor q = test::random_tensor({2, 3, lq, 5}, f64, 2);
        CHECK_CLOSE(skew->score_bias(Var(q), lk, in).value(),
                    test::naive_skew_scores(q, skew->weight().value(), lk, offset), 1e-12, 1e-12);
      }
    }
  }
}

TEST_CASE("skew: softmax attention with skew equals naive softmax over Q·Kᵀ + S") {
  auto skew = make_skew(11, 5);
  test::check_softmax_with_score_bias(*skew,
                                      [&](const Tensor& q, int64_t lk, int64_t offset) {
                                        return test::naive_skew_scores(q, skew->weight().value(),
                                                                       lk, offset);
                                      },
                                      {{7, 7}, {5, 9}, {11, 4}});
}

// Polynomial and softmax functions of every input: the harness's default tolerances hold.
TEST_CASE("skew: gradcheck (f64) through q, k, v and E, causal and cross attention") {
  auto attn = make_attention(
      test::attention_options(test::options("attention", {{"type", "softmax"}}), 2, 3));
  auto skew = make_skew(7, 3);
  for (bool causal : {true, false}) {
    const int64_t lq = 5, lk = causal ? 5 : 7;
    AttentionInputs in{test::padding_mask(lk, {1, 0}), causal, skew.get()};
    test::check_grad(
        [&](const std::vector<Var>& x) {
          skew->weight() = x[3];
          return attn->forward(x[0], x[1], x[2], in);
        },
        {test::random_tensor({2, 2, lq, 3}, f64, 6), test::random_tensor({2, 2, lk, 3}, f64, 7),
         test::random_tensor({2, 2, lk, 2}, f64, 8), skew->weight().value()});
  }
}

TEST_CASE("skew: memory beyond S is O(Lq·t3), not O(Lq·Lk·D)") {
  // D = 64: a Shaw-style [Lq, Lk, D] tensor of relative embeddings would be 64 times S.
  const int64_t n = 256, D = 64;
  auto skew = make_skew(n, D);
  const Tensor q = test::random_tensor({1, 1, n, D}, f64, 9);
  const int64_t peak = test::peak_bytes_of(Device::cpu(), [&] {
    Var qv(q, true);
    sum(skew->score_bias(qv, n, AttentionInputs{})).backward();
  });
  const int64_t unit = n * 2 * n * 8;  // bytes of one [Lq, 2 t3] f64 tensor
  INFO("peak " << peak << " bytes, " << static_cast<double>(peak) / unit << " x Lq·2t3");
  CHECK(peak < 8 * unit);
}

TEST_CASE("skew: inside MultiHeadAttention its weight is positional.weight and is trained") {
  MultiHeadAttentionConfig c;
  c.model_dim = 6;
  c.num_heads = 2;
  c.max_len = 7;
  c.positional = test::options("positional", {{"type", "skew"}});
  c.dtype = f64;
  MultiHeadAttention mha(c);
  const Var x(test::random_tensor({2, 7, 6}, f64, 20));
  sum(mha.forward(x, test::padding_mask(7, {0, 3}), true)).backward();
  const auto params = mha.named_parameters();
  REQUIRE(params.back().first == "positional.weight");
  CHECK(params.back().second.grad().shape() == Shape{3, 13});
  CHECK(all_finite(params.back().second.grad()));
}

TEST_CASE("skew: refusals name the problem; max_len defaults to the layer's") {
  auto skew = make_skew(4, 3);
  CHECK_NOTHROW(skew->check_host(test::TestHost({.forms_scores = true, .kernelized = false})));
  CHECK_THROWS_WITH_AS(
      skew->check_host(test::TestHost({.forms_scores = false, .kernelized = true})),
      doctest::Contains("attention 'test_host' does not form scores: skew adds a dense score "
                        "matrix S, which kernelized attention never forms; use shaw "
                        "(linear-cost) or fastrpb with linear attention"),
      Error);
  const Var q(zeros({1, 1, 3, 3}, f64));
  CHECK_THROWS_WITH_AS(skew->score_bias(q, 5, AttentionInputs{}),
                       doctest::Contains("query positions 0..2 and keys (5) must lie within "
                                         "max_len 4"),
                       Error);
  CHECK_THROWS_WITH_AS(skew->score_bias(Var(zeros({1, 1, 5, 3}, f64)), 2, AttentionInputs{}),
                       doctest::Contains("query positions 0..4 and keys (2) must lie within "
                                         "max_len 4"),
                       Error);
  AttentionInputs late;
  late.query_start = 2;
  CHECK_THROWS_WITH_AS(skew->score_bias(q, 3, late),
                       doctest::Contains("query positions 2..4 and keys (3) must lie within "
                                         "max_len 4"),
                       Error);
  CHECK_THROWS_WITH_AS(skew->score_bias(Var(zeros({1, 1, 3, 2}, f64)), 3, AttentionInputs{}),
                       doctest::Contains("q must be [batch, heads, length, 3]"), Error);
  const Options none = test::options("positional", {{"type", "skew"}});
  CHECK_THROWS_WITH_AS(make_positional(test::attention_options(none, 2, 3)),
                       doctest::Contains("[positional skew] needs the longest sequence t3"), Error);
  CHECK_THROWS_WITH_AS(
      make_positional(test::attention_options(
          test::options("positional", {{"type", "skew"}, {"max_lenn", "3"}}), 2, 3, 6)),
      doctest::Contains("unknown option 'max_lenn'"), Error);
  auto from_layer = std::dynamic_pointer_cast<SkewPositional>(
      make_positional(test::attention_options(none, 2, 3, 6)));
  REQUIRE(from_layer != nullptr);
  CHECK(from_layer->max_len() == 6);
  CHECK(from_layer->weight().shape() == Shape{3, 11});
}

TEST_CASE("skew: CUDA matches CPU") {
  // Inputs in [-0.5, 0.5]: f32 sums of a few terms stay well within atol 1e-6.
  const Tensor q = test::random_tensor({2, 3, 33, 4}, DType::f32, 10, -0.5, 0.5);
  auto skew = make_skew(40, 4, DType::f32);
  const Tensor e = test::random_tensor(skew->weight().shape(), DType::f32, 11, -0.5, 0.5);
  test::check_cuda_matches_cpu("skew",
                               [&](const std::vector<Tensor>& x) {
                                 skew->weight() = Var(x[1], true);
                                 const Var q(x[0]);
                                 const AttentionInputs causal{Tensor(), true, nullptr};
                                 return std::vector<Tensor>{
                                     skew->score_bias(q, 40, AttentionInputs{}).value(),
                                     skew->score_bias(q, 33, causal).value()};
                               },
                               {q, e});
}
