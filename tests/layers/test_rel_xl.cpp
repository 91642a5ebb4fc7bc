// rel_xl (Transformer-XL relative attention) against explicit loops from the paper's definition
// (memory M in {0, 3}, odd lengths, padding, a positional score bias, clamp_len), rel_shift
// against its definition, its f64 gradcheck through q, k, v and every parameter, refusals, and
// CPU ≡ CUDA.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/attention/rel_xl.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

std::shared_ptr<RelXlAttention> build(int64_t heads, int64_t head_dim, int64_t clamp_len = 0) {
  const Options opt =
      test::options("attention", {{"type", "rel_xl"}, {"clamp_len", std::to_string(clamp_len)}});
  return std::dynamic_pointer_cast<RelXlAttention>(
      make_attention(test::attention_options(opt, heads, head_dim)));
}

// TXL's sinusoid of distance `dist` (clamped): [sin(dist f_c) | cos(dist f_c)],
// f_c = 1 / 10000^(2c / width), c < width / 2.
std::vector<double> naive_sinusoid(int64_t dist, int64_t width, int64_t clamp_len) {
  if (clamp_len > 0) dist = std::min(dist, clamp_len);
  std::vector<double> s(width);
  for (int64_t c = 0; c < width / 2; ++c) {
    const double angle = static_cast<double>(dist) / std::pow(10000.0, 2.0 * c / width);
    s[c] = std::sin(angle);
    s[width / 2 + c] = std::cos(angle);
  }
  return s;
}

// score[i, j] = (q_i + u)·k_j + (q_i + v)·r_{(M+i)-j} for j <= M + i, r_d = W·sinusoid(d) by
// loops (entries right of M + i are blocked by causality and left 0), then the naive softmax.
Tensor naive_rel_xl(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& u_t,
                    const Tensor& vb_t, const Tensor& w_t, int64_t clamp_len,
                    const AttentionInputs& in, const Tensor& bias = {}, const Tensor& drop = {}) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3);
  const int64_t width = w_t.size(1), M = Lk - Lq;
  const auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
  const auto u = u_t.to_vector<double>(), vb = vb_t.to_vector<double>();
  const auto w = w_t.to_vector<double>();
  // drop: [Lk, width], row c scaling the sinusoid of distance Lk - 1 - c (TXL's pos_emb rows).
  const std::vector<double> scale =
      drop.defined() ? drop.to_vector<double>() : std::vector<double>(Lk * width, 1.0);
  std::vector<double> r(Lk * H * D, 0.0);  // r[dist][h * D + d]
  for (int64_t dist = 0; dist < Lk; ++dist) {
    auto s = naive_sinusoid(dist, width, clamp_len);
    for (int64_t c = 0; c < width; ++c) s[c] *= scale[(Lk - 1 - dist) * width + c];
    for (int64_t o = 0; o < H * D; ++o)
      for (int64_t c = 0; c < width; ++c) r[dist * H * D + o] += w[o * width + c] * s[c];
  }
  std::vector<double> scores(B * H * Lq * Lk, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j <= M + i; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            const double qd = qv[((b * H + h) * Lq + i) * D + d];
            s += (qd + u[h * D + d]) * kv[((b * H + h) * Lk + j) * D + d];
            s += (qd + vb[h * D + d]) * r[(M + i - j) * H * D + h * D + d];
          }
          scores[((b * H + h) * Lq + i) * Lk + j] = s;
        }
  Tensor st = Tensor::from_vector(scores, {B, H, Lq, Lk});
  if (bias.defined()) st = add(st, bias);
  return test::naive_softmax_from_scores(st, v, in, D);
}

// A fixed score bias S (a random [Lq, Lk] table), to see the hook is added before the scale.
class TableBias final : public Positional {
 public:
  explicit TableBias(Tensor table) : table_(std::move(table)) {}
  std::string name() const override { return "test_table_bias"; }
  Var score_bias(const Var&, int64_t, const AttentionInputs&) override { return Var(table_); }
  Tensor table_;
};

}  // namespace

// f64 against f64 loops: only the summation order differs (rel-shift, batched products), 1e-10.
TEST_CASE("rel_xl: equals explicit loops, memory M in {0, 3}, odd Lq, padding, score bias") {
  const int64_t B = 2, H = 2, D = 3, Dv = 4;
  auto attn = build(H, D);
  CHECK(attn->caps().forms_scores);
  CHECK_FALSE(attn->caps().kernelized);
  for (int64_t lq : {5, 7}) {
    for (int64_t mem : {0, 3}) {
      for (bool masked : {false, true}) {
        for (bool biased : {false, true}) {
          const int64_t lk = lq + mem;
          INFO("Lq " << lq << " M " << mem << " masked " << masked << " bias " << biased);
          const Tensor q = test::random_tensor({B, H, lq, D}, f64, 1);
          const Tensor k = test::random_tensor({B, H, lk, D}, f64, 2);
          const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 3);
          TableBias bias(test::random_tensor({lq, lk}, f64, 4));
          AttentionInputs in;
          in.causal = true;
          if (masked) in.key_mask = test::padding_mask(lk, {0, 2});
          if (biased) in.positional = &bias;
          const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
          const Tensor want =
              naive_rel_xl(q, k, v, attn->r_w_bias().value(), attn->r_r_bias().value(),
                           attn->r_net().weight().value(), 0, in, biased ? bias.table_ : Tensor());
          CHECK_CLOSE(got, want, 1e-10, 1e-10);
        }
      }
    }
  }
}

TEST_CASE("rel_xl: clamp_len gives distances above it the embedding of clamp_len") {
  const int64_t B = 2, H = 2, D = 3, lq = 5, lk = 8;
  auto clamped = build(H, D, 2);
  const Tensor q = test::random_tensor({B, H, lq, D}, f64, 5);
  const Tensor k = test::random_tensor({B, H, lk, D}, f64, 6);
  const Tensor v = test::random_tensor({B, H, lk, D}, f64, 7);
  AttentionInputs in{test::padding_mask(lk, {1, 0}), true, nullptr};
  const Tensor u = clamped->r_w_bias().value(), vb = clamped->r_r_bias().value();
  const Tensor w = clamped->r_net().weight().value();
  auto run = [&] { return clamped->forward(Var(q), Var(k), Var(v), in).value(); };
  const Tensor got = run();
  CHECK_CLOSE(got, naive_rel_xl(q, k, v, u, vb, w, 2, in), 1e-10, 1e-10);
  // The clamp matters here: the unclamped definition differs.
  CHECK_FALSE(allclose(got, naive_rel_xl(q, k, v, u, vb, w, 0, in), 1e-6, 1e-6));

  // The sinusoid table is kept while clamp_len stays and rebuilt when it changes: the trainer
  // sets the model's context before every update, and rebuilding the table each time made TXL
  // base's update 1.4x the bench's step on a GPU.
  CHECK(clamped->sinusoid_tables_built() == 1);
  clamped->set_clamp_len(2);
  CHECK_CLOSE(run(), naive_rel_xl(q, k, v, u, vb, w, 2, in), 1e-10, 1e-10);
  CHECK(clamped->sinusoid_tables_built() == 1);
  clamped->set_clamp_len(3);
  CHECK_CLOSE(run(), naive_rel_xl(q, k, v, u, vb, w, 3, in), 1e-10, 1e-10);
  CHECK(clamped->sinusoid_tables_built() == 2);
}

TEST_CASE("rel_xl: rel_shift moves row i left by Lq - 1 - i (App. B)") {
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{3, 5}, {4, 4}, {1, 3}}) {
    RELPOS_INFO("Lq {} Lk {}", lq, lk);
    const Tensor x = test::random_tensor({2, lq, lk}, f64, 8);  // a batch of two matrices
    const auto in = x.to_vector<double>();
    const auto out = rel_shift(Var(x)).value().contiguous().to_vector<double>();
    const int64_t mem = lk - lq;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < lq; ++i) {
        for (int64_t j = 0; j <= mem + i; ++j)
          CHECK(out[(b * lq + i) * lk + j] == in[(b * lq + i) * lk + j + lq - 1 - i]);
        if (mem + i + 1 < lk) CHECK(out[(b * lq + i) * lk + mem + i + 1] == 0.0);
      }
  }
}

TEST_CASE("rel_xl: parameters by TXL's names, normal(0, 0.02) init") {
  auto attn = build(4, 8);
  std::vector<std::string> names;
  for (const auto& [n, p] : attn->named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"r_w_bias", "r_r_bias", "r_net.weight"});
  CHECK(attn->r_w_bias().shape() == Shape{4, 8});
  CHECK(attn->r_net().weight().shape() == Shape{32, 32});
  CHECK_FALSE(attn->r_net().bias().defined());
  // 1024 draws: the sample std is within 10% of 0.02 with overwhelming probability.
  const Tensor w = attn->r_net().weight().value();
  const double sd = std::sqrt(mean(mul(w, w)).item());
  CHECK(sd > 0.018);
  CHECK(sd < 0.022);
}

// Default gradcheck tolerances (eps 1e-6, atol 1e-6, rtol 1e-4): smooth in every input.
TEST_CASE("rel_xl: gradcheck (f64) w.r.t. q, k, v, u, v-bias and r_net weight") {
  auto attn = build(2, 3, 3);
  const int64_t lq = 3, lk = 5;
  AttentionInputs in{test::padding_mask(lk, {1, 0}), true, nullptr};
  test::check_grad(
      [&](const std::vector<Var>& x) {
        attn->r_w_bias() = x[3];
        attn->r_r_bias() = x[4];
        attn->r_net().weight() = x[5];
        return attn->forward(x[0], x[1], x[2], in);
      },
      {test::random_tensor({2, 2, lq, 3}, f64, 9), test::random_tensor({2, 2, lk, 3}, f64, 10),
       test::random_tensor({2, 2, lk, 2}, f64, 11), test::random_tensor({2, 3}, f64, 12),
       test::random_tensor({2, 3}, f64, 13), test::random_tensor({6, 6}, f64, 14)});
}

TEST_CASE("rel_xl: refuses non-causal use, Lk < Lq and bad options, saying why") {
  auto attn = build(2, 3);
  const Var q(test::random_tensor({1, 2, 4, 3}, f64, 15));
  const Var k(test::random_tensor({1, 2, 3, 3}, f64, 16));
  CHECK_THROWS_WITH_AS(attn->forward(q, q, q, AttentionInputs{}),
                       "[attention rel_xl] Transformer-XL attention is causal: the relative "
                       "distance (M + i) - j is only embedded for keys at or before the query; "
                       "got causal = false",
                       Error);
  CHECK_THROWS_WITH_AS(attn->forward(q, k, k, AttentionInputs{{}, true, nullptr}),
                       "[attention rel_xl] keys must be [memory; segment], so Lk >= Lq; got Lq 4 "
                       "and Lk 3",
                       Error);
  const auto make = [](std::vector<std::pair<std::string, std::string>> kv, int64_t model_dim) {
    AttentionOptions opt = test::attention_options(test::options("attention", kv), 1, 3);
    opt.model_dim = model_dim;
    return make_attention(opt);
  };
  CHECK_THROWS_WITH_AS(make({{"type", "rel_xl"}, {"clamp_len", "-1"}}, 4),
                       "[attention] clamp_len must be >= 0, got -1", Error);
  CHECK_THROWS_WITH_AS(make({{"type", "rel_xl"}, {"dropout", "1"}}, 4),
                       "[attention rel_xl] dropout must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(make({{"type", "rel_xl"}}, 3),
                       "[attention rel_xl] model_dim (the width of the sinusoidal distance "
                       "embedding) must be positive and even, got 3",
                       Error);
}

namespace {

// A form of rel_xl (fused or its naive twin) from a generator of a fixed seed: every form gets
// the same parameters and the same dropout stream.
std::shared_ptr<RelXlAttention> build_form(bool fused, int64_t clamp_len, double dropout) {
  Generator gen(31);
  const Options opt = test::options("attention", {{"type", "rel_xl"},
                                                  {"clamp_len", std::to_string(clamp_len)},
                                                  {"dropout", std::to_string(dropout)},
                                                  {"fused", fused ? "true" : "false"}});
  return std::dynamic_pointer_cast<RelXlAttention>(
      make_attention(AttentionOptions{opt, 2, 5, 6, 0, f64, &gen}));
}

// {output, dq, dk, dv, du, dv-bias, dW_r} of one forward + backward (fixed output gradient).
std::vector<Tensor> forward_backward(RelXlAttention& attn, const std::vector<Tensor>& qkv,
                                     const AttentionInputs& in) {
  const Var q(qkv[0], true), k(qkv[1], true), v(qkv[2], true);
  const Var y = attn.forward(q, k, v, in);
  y.backward(test::random_tensor(y.shape(), f64, 77));
  return {y.value(),
          q.grad(),
          k.grad(),
          v.grad(),
          attn.r_w_bias().grad(),
          attn.r_r_bias().grad(),
          attn.r_net().weight().grad()};
}

}  // namespace

// Issue 30: TXL drops its sinusoidal distance embedding (pos_emb = self.drop(pos_emb)) once per
// forward pass, the same mask for every layer: fused and naive forms, clamp_len, padding, memory,
// logits of tens.
TEST_CASE("rel_xl: the distance embedding's dropout, one mask per pass shared by the layers") {
  const int64_t B = 2, H = 2, D = 5, Lq = 5, M = 3, Lk = Lq + M;
  const auto diff = [](const Tensor& a, const Tensor& b) { return max(abs(sub(a, b))).item(); };
  const Tensor q = mul_scalar(test::random_tensor({B, H, Lq, D}, f64, 1), 4);
  const Tensor k = mul_scalar(test::random_tensor({B, H, Lk, D}, f64, 2), 4);
  const Tensor v = test::random_tensor({B, H, Lk, D}, f64, 3);
  for (const bool fused : {true, false}) {
    for (const int64_t clamp_len : {0, 2}) {
      for (const bool masked : {false, true}) {
        INFO("fused " << fused << " clamp_len " << clamp_len << " masked " << masked);
        // The same parameters in each (build_form's fixed seed).
        auto first = build_form(fused, clamp_len, 0), second = build_form(fused, clamp_len, 0);
        auto plain = build_form(fused, clamp_len, 0);
        Generator gen(11);
        auto dropout = std::make_shared<DistanceDropout>(0.5, gen);
        first->share_distance_dropout(dropout, true);
        second->share_distance_dropout(dropout, false);
        AttentionInputs in;
        in.causal = true;
        if (masked) in.key_mask = test::padding_mask(Lk, {0, 2});
        auto run = [&](RelXlAttention& a) { return a.forward(Var(q), Var(k), Var(v), in).value(); };
        const Tensor y1 = run(*first);
        // This pass's keep mask / (1 - p), read back through the shared module.
        const int64_t width = first->r_net().weight().size(1);
        const Tensor drop = dropout->apply(ones({Lk, width}, f64), false);
        const auto kept = drop.to_vector<double>();
        CHECK(std::all_of(kept.begin(), kept.end(), [](double x) { return x == 0 || x == 2; }));
        CHECK(std::count(kept.begin(), kept.end(), 0.0) > 0);
        CHECK_CLOSE(y1,
                    naive_rel_xl(q, k, v, first->r_w_bias().value(), first->r_r_bias().value(),
                                 first->r_net().weight().value(), clamp_len, in, {}, drop),
                    1e-10, 1e-10);
        CHECK(diff(run(*second), y1) == 0);   // the later layer reuses the mask
        CHECK(diff(run(*plain), y1) > 1e-3);  // an undropped layer differs
        CHECK(diff(run(*first), y1) > 1e-3);  // the first layer's next pass draws anew
        // Eval mode: the embedding is not dropped.
        dropout->eval();
        CHECK(diff(run(*first), run(*plain)) == 0);
      }
    }
  }
}

// The position term inside the fused op's tiles (CPU) against the composed rel-shift form: the
// output and every gradient, with a memory, a same_length window, padding, dropout, clamp_len,
// lengths past one tile (128 queries x 256 keys) and logits in the hundreds.
TEST_CASE("rel_xl: the fused form equals its naive twin, output and every gradient") {
  const int64_t B = 2, H = 2, D = 5, Dv = 3;
  const std::vector<std::pair<int64_t, int64_t>> lengths = {{5, 0}, {7, 3}, {130, 300}};
  for (const auto& [lq, mem] : lengths)
    for (const int64_t window : {int64_t{0}, int64_t{9}})
      for (const bool padded : {false, true})
        for (const double dropout : {0.0, 0.3})
          for (const int64_t clamp_len : {int64_t{0}, int64_t{4}}) {
            const int64_t lk = lq + mem;
            RELPOS_INFO("Lq {} M {} window {} padding {} dropout {} clamp_len {}", lq, mem, window,
                        padded, dropout, clamp_len);
            const double range = lq > 100 ? 8.0 : 1.0;  // logits up to ~range² D
            const std::vector<Tensor> qkv = {
                test::random_tensor({B, H, lq, D}, f64, 1, -range, range),
                test::random_tensor({B, H, lk, D}, f64, 2, -range, range),
                test::random_tensor({B, H, lk, Dv}, f64, 3)};
            AttentionInputs in;
            in.causal = true;
            in.window = window;
            if (padded) in.key_mask = test::padding_mask(lk, {0, lk / 3});
            auto fused = build_form(true, clamp_len, dropout);
            auto naive = build_form(false, clamp_len, dropout);
            CHECK(fused->caps().fused);
            CHECK_FALSE(naive->caps().fused);
            const auto want = forward_backward(*naive, qkv, in);
            const auto got = forward_backward(*fused, qkv, in);
            const char* names[] = {"output", "dq", "dk", "dv", "du", "dv-bias", "dW_r"};
            for (size_t i = 0; i < want.size(); ++i) {
              INFO(names[i]);
              CHECK_CLOSE(got[i], want[i], 1e-9, 1e-10);
            }
          }
}

// Forward + backward peak bytes at L and 4L (memory of L keys, L queries): the fused form grows
// linearly, its naive twin quadratically.
TEST_CASE("rel_xl: the fused form's peak memory grows linearly in L") {
  const auto peak = [](bool fused, int64_t n) {
    auto attn = build_form(fused, 0, 0.1);
    const Tensor q = test::random_tensor({1, 2, n, 5}, f64, 4);
    const Tensor k = test::random_tensor({1, 2, 2 * n, 5}, f64, 5);
    return test::peak_bytes_of(Device::cpu(), [&] {
      const Var qv(q, true), kv(k, true), vv(k, true);
      sum(attn->forward(qv, kv, vv, AttentionInputs{Tensor(), true, nullptr})).backward();
    });
  };
  const double fused = static_cast<double>(peak(true, 1024)) / static_cast<double>(peak(true, 256));
  const double naive =
      static_cast<double>(peak(false, 1024)) / static_cast<double>(peak(false, 256));
  INFO("peak ratio 1024 / 256: fused " << fused << ", naive " << naive);
  CHECK(fused < 4.5);
  CHECK(naive > 8);
}

TEST_CASE("rel_xl: CUDA matches CPU") {
  const Tensor q = test::random_tensor({2, 3, 21, 8}, DType::f32, 17);
  const Tensor k = test::random_tensor({2, 3, 33, 8}, DType::f32, 18);
  const Tensor v = test::random_tensor({2, 3, 33, 8}, DType::f32, 19);
  const Tensor mask = test::padding_mask(33, {3, 0});
  test::check_cuda_matches_cpu(
      "rel_xl attention",
      [](const std::vector<Tensor>& x) {
        Generator gen(20);  // the same parameters on both devices
        const Options opt = test::options("attention", {{"type", "rel_xl"}, {"clamp_len", "20"}});
        auto attn = make_attention(AttentionOptions{opt, 3, 8, 24, 0, DType::f32, &gen});
        attn->to(x[0].device());
        AttentionInputs in{x[3], true, nullptr};
        return std::vector<Tensor>{attn->forward(Var(x[0]), Var(x[1]), Var(x[2]), in).value()};
      },
      {q, k, v, mask});
}
