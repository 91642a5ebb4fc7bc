// softmax attention against explicit loops (odd lengths, Lq != Lk, padding, causal aligned at
// the ends, a positional score bias), its f64 gradcheck, and CPU ≡ CUDA.
#include "layers/attention/masks.h"
#include "layers/attention/multi_head.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

// A score bias S[i, j] = q_i · a_(j - i) from a small table, enough to see the hook is used
// before the 1/sqrt(D) scale.
class TestScoreBias final : public Positional {
 public:
  explicit TestScoreBias(Tensor table) : table_(std::move(table)) {}
  std::string name() const override { return "test_bias"; }
  Var score_bias(const Var& q, int64_t key_len, const AttentionInputs&) override {
    // [Lq, Lk, D] table rows selected by (j - i) mod rows, then S = sum_d q[i, d] a[i, j, d].
    const int64_t lq = q.size(2), d = q.size(3), rows = table_.size(0);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < key_len; ++j) idx.push_back(((j - i) % rows + rows) % rows);
    Var a = index_select(Var(table_), 0, Tensor::from_vector(idx, {lq * key_len}));
    a = reshape(a, {1, 1, lq, key_len, d});
    return sum(unsqueeze(q, 3) * a, {4});
  }
  Tensor table_;
};

Var run_softmax(const std::vector<Var>& x, const AttentionInputs& in, int64_t heads) {
  static auto attn = make_attention(
      test::attention_options(test::options("attention", {{"type", "softmax"}}), heads, 5));
  return attn->forward(x[0], x[1], x[2], in);
}

}  // namespace

TEST_CASE("softmax: equals explicit loops, odd lengths, Lq != Lk, padding, causal, bias") {
  const int64_t B = 2, H = 3, D = 5, Dv = 4;
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{7, 7}, {5, 9}, {9, 4}}) {
    for (bool causal : {false, true}) {
      for (bool masked : {false, true}) {
        for (bool biased : {false, true}) {
          RELPOS_INFO("Lq {} Lk {} causal {} masked {} bias {}", lq, lk, causal, masked, biased);
          const Tensor q = test::random_tensor({B, H, lq, D}, f64, 1);
          const Tensor k = test::random_tensor({B, H, lk, D}, f64, 2);
          const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 3);
          TestScoreBias bias(test::random_tensor({3, D}, f64, 4));
          AttentionInputs in;
          in.causal = causal;
          if (masked) in.key_mask = test::padding_mask(lk, {0, 2});
          if (biased) in.positional = &bias;
          const Tensor got = run_softmax({Var(q), Var(k), Var(v)}, in, H).value();
          Tensor scores = test::naive_scores(q, k);
          if (biased) scores = add(scores, bias.score_bias(Var(q), lk, in).value());
          CHECK_CLOSE(got, test::naive_softmax_from_scores(scores, v, in, D), 1e-12, 1e-12);
        }
      }
    }
  }
}

TEST_CASE("softmax: gradcheck (f64) through q, k, v with padding and causality") {
  const Tensor q = test::random_tensor({2, 2, 5, 5}, f64, 5);
  const Tensor k = test::random_tensor({2, 2, 6, 5}, f64, 6);
  const Tensor v = test::random_tensor({2, 2, 6, 3}, f64, 7);
  AttentionInputs in;
  in.causal = true;
  in.key_mask = test::padding_mask(6, {1, 0});
  test::check_grad([&](const std::vector<Var>& x) { return run_softmax(x, in, 2); }, {q, k, v});
}

TEST_CASE("softmax: CUDA matches CPU") {
  const Tensor q = test::random_tensor({2, 3, 33, 5}, DType::f32, 8);
  const Tensor k = test::random_tensor({2, 3, 40, 5}, DType::f32, 9);
  const Tensor v = test::random_tensor({2, 3, 40, 5}, DType::f32, 10);
  const Tensor mask = test::padding_mask(40, {3, 0});
  test::check_cuda_matches_cpu(
      "softmax attention",
      [](const std::vector<Tensor>& x) {
        AttentionInputs in{x[3], true, nullptr};
        return std::vector<Tensor>{run_softmax({Var(x[0]), Var(x[1]), Var(x[2])}, in, 3).value()};
      },
      {q, k, v, mask});
}

TEST_CASE("masks: causal alignment at the ends and key padding") {
  const Tensor c = causal_blocked(2, 4, Device::cpu());
  // Query 0 sits at key position 2, query 1 at key position 3.
  CHECK(c.to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 0});
  AttentionInputs in{test::padding_mask(3, {1}), false, nullptr};
  CHECK(blocked_pairs(in, 2, 3, Device::cpu()).shape() == Shape{1, 1, 1, 3});
  CHECK_FALSE(blocked_pairs(AttentionInputs{}, 2, 3, Device::cpu()).defined());
}

TEST_CASE("masks: a causal window keeps the last `window` keys up to each query") {
  // Lq 3 after a memory of 2 (Lk 5), window 2: query i at key position p = 2 + i sees p - 1, p.
  AttentionInputs in;
  in.causal = true;
  in.window = 2;
  CHECK(blocked_pairs(in, 3, 5, Device::cpu()).reshape({15}).to_vector<uint8_t>() ==
        std::vector<uint8_t>{1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0});
  // softmax with the window against the loops (NaiveMask applies the window by definition).
  const Tensor q = test::random_tensor({2, 3, 4, 5}, f64, 30);
  const Tensor k = test::random_tensor({2, 3, 7, 5}, f64, 31);
  const Tensor v = test::random_tensor({2, 3, 7, 2}, f64, 32);
  for (int64_t window : {1, 3, 9}) {
    INFO("window " << window);
    in.window = window;
    in.key_mask = test::padding_mask(7, {0, 1});
    const Tensor got = run_softmax({Var(q), Var(k), Var(v)}, in, 3).value();
    CHECK_CLOSE(got, test::naive_softmax_from_scores(test::naive_scores(q, k), v, in, 5), 1e-12,
                1e-12);
  }
  // A window without causality, or queries placed elsewhere than after the memory, is refused.
  AttentionInputs bad;
  bad.window = 2;
  CHECK(test::error_of([&] {
          run_softmax({Var(q), Var(k), Var(v)}, bad, 3);
        }).find("window must be >= 0 and needs causal attention") != std::string::npos);
  bad.window = 0;
  bad.causal = true;
  bad.query_start = 1;
  CHECK(test::error_of([&] {
          run_softmax({Var(q), Var(k), Var(v)}, bad, 3);
        }).find("query_start must be Lk - Lq = 3, got 1") != std::string::npos);
}

namespace {

// {output, d input, every parameter's gradient by name} of one forward + backward through a
// multi-head layer of softmax attention hosting `encoding`; fused or its naive twin, built from a
// generator of a fixed seed (the same parameters and dropout stream in either form).
std::vector<Tensor> hosted_step(const std::string& encoding, bool fused, bool causal,
                                const Tensor& x, const Tensor& mask) {
  Generator gen(41);
  MultiHeadAttentionConfig c;
  c.model_dim = 12;
  c.num_heads = 3;
  c.max_len = x.size(1);
  c.attention = test::options(
      "attention", {{"type", "softmax"}, {"dropout", "0.2"}, {"fused", fused ? "true" : "false"}});
  c.positional = test::options("positional", {{"type", encoding}});
  c.dtype = DType::f64;
  c.gen = &gen;
  MultiHeadAttention layer(c);
  const Var in(x, true);
  const Var y = layer.forward(in, mask, causal);
  y.backward(test::random_tensor(y.shape(), DType::f64, 43));
  std::vector<Tensor> out{y.value(), in.grad()};
  for (const auto& [name, p] : layer.named_parameters()) out.push_back(p.grad());
  return out;
}

}  // namespace

// Shaw's and skew's score bias inside the fused op's tiles (a table of distances) against the
// naive twin that adds it to the [L, L] scores: the output and every gradient, causal or not,
// with padding, dropout, lengths past one tile (128 x 256) and, for Shaw, distances past its
// window (clipped).
TEST_CASE("softmax + shaw / skew: the score bias inside the fused tiles equals the naive form") {
  for (const std::string encoding : {"shaw", "skew"})
    for (const int64_t len : {int64_t{7}, int64_t{300}})
      for (const bool causal : {false, true})
        for (const bool padded : {false, true}) {
          RELPOS_INFO("{} L {} causal {} padding {}", encoding, len, causal, padded);
          const Tensor x = test::random_tensor({2, len, 12}, DType::f64, 42, -2, 2);
          const Tensor mask = padded ? test::padding_mask(len, {0, len / 3}) : Tensor();
          const auto fused = hosted_step(encoding, true, causal, x, mask);
          const auto naive = hosted_step(encoding, false, causal, x, mask);
          REQUIRE(fused.size() == naive.size());
          for (size_t i = 0; i < fused.size(); ++i) {
            INFO("result " << i << " (0: output, 1: d input, then the parameters)");
            CHECK_CLOSE(fused[i], naive[i], 1e-9, 1e-10);
          }
        }
}

// The same with a segment memory before the queries (Lk = M + Lq, causal, as a language model
// with mem_len runs it), where the table's distances start at query position M + i: softmax +
// shaw / skew fused against naive, output and the gradients of q, k, v and the encoding's table.
TEST_CASE("softmax + shaw / skew after a memory: the fused tiles equal the naive form") {
  const int64_t B = 2, H = 2, D = 4, lq = 150, mem = 170, lk = lq + mem;
  for (const std::string encoding : {"shaw", "skew"})
    for (const bool padded : {false, true}) {
      RELPOS_INFO("{} padding {}", encoding, padded);
      std::vector<std::vector<Tensor>> results;
      for (const bool fused : {true, false}) {
        Generator gen(47);  // the same table and dropout stream in both forms
        const auto attn = make_attention(AttentionOptions{
            test::options(
                "attention",
                {{"type", "softmax"}, {"dropout", "0.2"}, {"fused", fused ? "true" : "false"}}),
            H, D, H * D, lk, f64, &gen});
        const auto positional = make_positional(AttentionOptions{
            test::options("positional", {{"type", encoding}}), H, D, H * D, lk, f64, &gen});
        AttentionInputs in;
        in.causal = true;
        in.positional = positional.get();
        if (padded) in.key_mask = test::padding_mask(lk, {0, 40});
        const Var q(test::random_tensor({B, H, lq, D}, f64, 1, -3, 3), true);
        const Var k(test::random_tensor({B, H, lk, D}, f64, 2, -3, 3), true);
        const Var v(test::random_tensor({B, H, lk, D}, f64, 3), true);
        const Var y = attn->forward(q, k, v, in);
        y.backward(test::random_tensor(y.shape(), f64, 4));
        std::vector<Tensor> r{y.value(), q.grad(), k.grad(), v.grad()};
        for (const auto& [name, p] : positional->named_parameters()) r.push_back(p.grad());
        results.push_back(r);
      }
      REQUIRE(results[0].size() == 5);
      REQUIRE(results[1].size() == 5);
      for (size_t i = 0; i < 5; ++i) {
        INFO("result " << i << " (output, dq, dk, dv, the table)");
        CHECK_CLOSE(results[0][i], results[1][i], 1e-9, 1e-10);
      }
    }
}
