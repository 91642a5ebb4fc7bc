// FastRPB 1-D and 2-D (positional fastrpb, fastrpb2d) against their dense naive twins
// (fastrpb_naive.h), f64 gradients through V and the weights, inside MultiHeadAttention, memory
// growth, refused inputs, and CPU ≡ CUDA. Weights are set to random values: the init (~1e-5)
// would hide errors. f64 results agree to 1e-10: the FFT path differs from the dense sums only by
// rounding (~1e-15 relative at these lengths), so 1e-10 leaves margin without hiding a wrong term.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "layers/attention/multi_head.h"
#include "layers/attention/toeplitz.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/fastrpb_naive.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

Options fastrpb_options(bool symmetric, int64_t front, int64_t back) {
  return test::options("positional", {{"type", "fastrpb"},
                                      {"parameterization", symmetric ? "symmetric" : "full"},
                                      {"special_tokens_front", std::to_string(front)},
                                      {"special_tokens_back", std::to_string(back)}});
}

Options fastrpb2d_options(bool symmetric, int64_t rows, int64_t cols, int64_t front = 0,
                          int64_t back = 0) {
  Options opt = fastrpb_options(symmetric, front, back);
  opt.set("type", "fastrpb2d");
  opt.set_list("grid", {std::to_string(rows), std::to_string(cols)});
  return opt;
}

// An encoding whose weights are uniform in [-scale, scale) from `seed`.
std::shared_ptr<Positional> build(const Options& opt, int64_t heads, int64_t max_len, DType dtype,
                                  uint64_t seed, double scale = 1) {
  auto pos = make_positional(test::attention_options(opt, heads, 4, max_len, dtype));
  Var w = pos->parameters().at(0);
  w.set_value(test::random_tensor(w.shape(), dtype, seed, -scale, scale));
  return pos;
}

Tensor weight_of(const Positional& pos) {
  return pos.parameters().at(0).value();
}

// gradcheck (autograd/gradcheck.h) for the encoding's weight, a parameter rather than an input:
// central differences of sum(f() * r) per weight element against what backward() leaves in its
// grad. f is linear in the weight, so the differences are exact up to rounding (~1e-9 with
// eps 1e-6), well inside the gradcheck tolerance (atol and rtol 1e-6).
void check_weight_grad(const Positional& pos, const std::function<Var()>& f) {
  Var w = pos.parameters().at(0);
  const Tensor w0 = w.value().clone();
  const Var out = f();
  const Tensor r = test::random_tensor(out.shape(), f64, 99);
  w.zero_grad();
  out.backward(r);
  const Tensor analytic = w.grad();
  const std::vector<double> base = w0.to_vector<double>();
  const double eps = 1e-6;
  const auto loss_at = [&](size_t k, double delta) {
    std::vector<double> moved = base;
    moved[k] += delta;
    w.set_value(Tensor::from_vector(moved, w0.shape()));
    return sum(mul(f().value(), r)).item();
  };
  std::vector<double> numeric(base.size());
  for (size_t k = 0; k < base.size(); ++k)
    numeric[k] = (loss_at(k, eps) - loss_at(k, -eps)) / (2 * eps);
  w.set_value(w0);
  CHECK_CLOSE(analytic, Tensor::from_vector(numeric, w0.shape()), 1e-6, 1e-6);
}

}  // namespace

TEST_CASE("fastrpb: fft product equals the dense Toeplitz matrix, odd lengths, causal, padding") {
  const int64_t B = 2, H = 3, D = 4;
  for (int64_t len : {1, 7, 31, 33})
    for (int64_t max_len : {len, int64_t{40}})  // 40: the central slice of longer weights
      for (bool symmetric : {false, true})
        for (bool causal : {false, true})
          for (bool masked : {false, true}) {
            INFO("L " << len << " max_len " << max_len << " symmetric " << symmetric << " causal "
                      << causal << " masked " << masked);
            auto pos = build(fastrpb_options(symmetric, 0, 0), H, max_len, f64, 11);
            const Tensor v = test::random_tensor({B, H, len, D}, f64, 12);
            AttentionInputs in;
            in.causal = causal;
            if (masked) in.key_mask = test::padding_mask(len, {len / 2, 0});
            const Tensor got = pos->output_term(Var(v), len, in).value();
            const Tensor want = test::naive_fastrpb(weight_of(*pos), symmetric, v, in, 0, 0);
            CHECK_CLOSE(got, want, 1e-10, 1e-10);
          }
}

TEST_CASE("fastrpb: causal queries after a memory get the last Lq rows of the dense product") {
  // Keys = [memory (M); segment (Lq)]: query i sits at key position M + i, so its row is row
  // M + i of the causal Toeplitz product over all Lk keys (odd lengths, M < Lq and M > Lq).
  const int64_t B = 2, H = 3, D = 4;
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{5, 7}, {3, 11}, {1, 9}, {7, 7}}) {
    for (bool masked : {false, true}) {
      RELPOS_INFO("Lq {} Lk {} masked {}", lq, lk, masked);
      auto pos = build(fastrpb_options(false, 0, 0), H, 16, f64, 14);
      const Tensor v = test::random_tensor({B, H, lk, D}, f64, 15);
      AttentionInputs in;
      in.causal = true;
      if (masked) in.key_mask = test::padding_mask(lk, {0, 2});
      const Tensor got = pos->output_term(Var(v), lq, in).value();
      const Tensor all = test::naive_fastrpb(weight_of(*pos), false, v, in, 0, 0);  // [B, H, Lk, D]
      CHECK_CLOSE(got, all.slice(2, lk - lq, lk), 1e-10, 1e-10);
    }
  }
}

TEST_CASE("fastrpb: special tokens get zero rows and take no part, front and back") {
  const int64_t L = 11;
  for (auto [front, back] : {std::pair<int64_t, int64_t>{1, 0}, {0, 1}, {2, 1}})
    for (bool causal : {false, true})
      for (bool masked : {false, true}) {
        RELPOS_INFO("front {} back {} causal {} masked {}", front, back, causal, masked);
        auto pos = build(fastrpb_options(false, front, back), 2, 13, f64, 13);
        const Tensor v = test::random_tensor({2, 2, L, 3}, f64, 14);
        AttentionInputs in;
        in.causal = causal;
        if (masked) in.key_mask = test::padding_mask(L, {3, 0});
        const Tensor got = pos->output_term(Var(v), L, in).value();
        CHECK_CLOSE(got, test::naive_fastrpb(weight_of(*pos), false, v, in, front, back), 1e-10,
                    1e-10);
        const std::vector<double> y = got.to_vector<double>();  // [2, 2, L, 3]
        int64_t nonzero_special = 0;
        for (int64_t bh = 0; bh < 4; ++bh)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t d = 0; d < 3; ++d)
              if ((i < front || i >= L - back) && y[(bh * L + i) * 3 + d] != 0) ++nonzero_special;
        CHECK(nonzero_special == 0);
      }
}

TEST_CASE("fastrpb2d: equals the dense 2-D distance tensor, non-square grids, padding, specials") {
  const int64_t B = 2, H = 3, D = 4;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {7, 4}, {4, 4}, {1, 1}})
    for (bool symmetric : {false, true})
      for (bool masked : {false, true})
        for (int64_t special : {0, 1}) {
          RELPOS_INFO("grid {}x{} symmetric {} masked {} special tokens {}", rows, cols, symmetric,
                      masked, special);
          auto pos =
              build(fastrpb2d_options(symmetric, rows, cols, special, special), H, 0, f64, 15);
          const int64_t len = rows * cols + 2 * special;
          const Tensor v = test::random_tensor({B, H, len, D}, f64, 16);
          AttentionInputs in;
          if (masked) in.key_mask = test::padding_mask(len, {0, len / 3});
          const Tensor got = pos->output_term(Var(v), len, in).value();
          const Tensor want = test::naive_fastrpb2d(weight_of(*pos), symmetric, rows, cols, v, in,
                                                    special, special);
          CHECK_CLOSE(got, want, 1e-10, 1e-10);
        }
}

TEST_CASE("fastrpb: gradcheck (f64) through V and the weights, causal and not") {
  const int64_t L = 8;
  const Tensor v = test::random_tensor({2, 2, L, 3}, f64, 22);
  for (bool symmetric : {false, true})
    for (bool causal : {false, true}) {
      INFO("symmetric " << symmetric << " causal " << causal);
      auto pos = build(fastrpb_options(symmetric, 1, 1), 2, 9, f64, 21);
      AttentionInputs in;
      in.causal = causal;
      in.key_mask = test::padding_mask(L, {2, 0});
      test::check_grad([&](const std::vector<Var>& x) { return pos->output_term(x[0], L, in); },
                       {v});
      check_weight_grad(*pos, [&] { return pos->output_term(Var(v), L, in); });
    }
}

TEST_CASE("fastrpb2d: gradcheck (f64) through V and the weights") {
  const int64_t L = 13;  // a 3x4 grid after one front special token
  const Tensor v = test::random_tensor({2, 2, L, 3}, f64, 24);
  for (bool symmetric : {false, true}) {
    INFO("symmetric " << symmetric);
    auto pos = build(fastrpb2d_options(symmetric, 3, 4, 1, 0), 2, 0, f64, 23);
    AttentionInputs in;
    in.key_mask = test::padding_mask(L, {2, 0});
    test::check_grad([&](const std::vector<Var>& x) { return pos->output_term(x[0], L, in); }, {v});
    check_weight_grad(*pos, [&] { return pos->output_term(Var(v), L, in); });
  }
}

TEST_CASE(
    "fastrpb: MultiHeadAttention adds W·V to softmax attention before the output projection") {
  const int64_t B = 2, L = 7, H = 2, Dh = 3, dm = H * Dh;
  Generator gen(5);
  MultiHeadAttentionConfig config;
  config.model_dim = dm;
  config.num_heads = H;
  config.positional = test::options("positional", {{"type", "fastrpb"}});
  config.max_len = 9;  // longer than L: the central slice of the weights is used
  config.dtype = f64;
  config.gen = &gen;
  MultiHeadAttention mha(config);
  std::map<std::string, Tensor> p;
  for (auto& [name, var] : mha.named_parameters()) {
    if (name == "positional.weight") var.set_value(test::random_tensor(var.shape(), f64, 30));
    p[name] = var.value();
  }
  REQUIRE(p.at("positional.weight").shape() == Shape{H, 2 * 9 - 1});
  const Tensor x = test::random_tensor({B, L, dm}, f64, 31);
  const auto heads = [&](const std::string& proj) {  // [B, H, L, Dh]
    return matmul(x, p.at(proj + ".weight"), false, true)
        .reshape({B, L, H, Dh})
        .transpose(1, 2)
        .contiguous();
  };
  const Tensor q = heads("q_proj"), k = heads("k_proj"), v = heads("v_proj");
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    const AttentionInputs in{test::padding_mask(L, {0, 2}), causal, nullptr};
    const Tensor y = add(test::naive_softmax_from_scores(test::naive_scores(q, k), v, in, Dh),
                         test::naive_fastrpb(p.at("positional.weight"), false, v, in, 0, 0));
    const Tensor merged = y.transpose(1, 2).contiguous().reshape({B, L, dm});  // [B, L, dm]
    const Tensor want = matmul(merged, p.at("out_proj.weight"), false, true);
    CHECK_CLOSE(mha.forward(Var(x), in.key_mask, causal).value(), want, 1e-10, 1e-10);
  }
}

TEST_CASE("fastrpb: forward + backward memory grows linearly with length (N vs 4N)") {
  const int64_t H = 2, D = 16, n = 1024;
  auto pos = make_positional(test::attention_options(
      test::options("positional", {{"type", "fastrpb"}}), H, D, 4 * n, DType::f32));
  const auto peak = [&](int64_t len) {
    const Tensor v = test::random_tensor({1, H, len, D}, DType::f32, 41);
    const Tensor g = test::random_tensor({1, H, len, D}, DType::f32, 42);
    pos->zero_grad();
    return test::peak_bytes_of(Device::cpu(), [&] {
      Var x(v, true);
      pos->output_term(x, len, AttentionInputs{}).backward(g);
    });
  };
  const int64_t small = peak(n), large = peak(4 * n);
  const int64_t dense = H * 4 * n * 4 * n * 4;  // the [H, 4N, 4N] f32 matrix the FFT avoids
  INFO("peak bytes at N " << small << ", at 4N " << large);
  CHECK(large < 4.5 * small);
  CHECK(large < dense / 16);
}

TEST_CASE("fastrpb: circulant size is the smallest 2^a 3^b 5^c >= 2n - 1") {
  CHECK(toeplitz_fft_size(1) == 1);
  CHECK(toeplitz_fft_size(4) == 8);
  CHECK(toeplitz_fft_size(5) == 9);
  CHECK(toeplitz_fft_size(33) == 72);
  CHECK(toeplitz_fft_size(1024) == 2048);
}

TEST_CASE("fastrpb: init is a tiny ramp in |d| per head plus a per-head offset") {
  for (bool symmetric : {false, true}) {
    INFO("symmetric " << symmetric);
    auto pos = make_positional(test::attention_options(fastrpb_options(symmetric, 0, 0), 4, 4, 6));
    const Tensor w = weight_of(*pos);
    CHECK(w.shape() == (symmetric ? Shape{4, 6} : Shape{4, 11}));
    const test::NaiveToeplitzWeights t(w, symmetric);
    for (int64_t h = 0; h < 4; ++h) {
      const double offset = t.at(h, 0), slope = t.at(h, 1) - offset;
      CHECK(slope >= 0);
      CHECK(slope < 1e-5);
      CHECK(std::abs(offset) < 1e-5);  // 1e-6 z, z ~ N(0, 1): ten standard deviations
      for (int64_t d = -5; d <= 5; ++d)
        CHECK(std::abs(t.at(h, d) - (offset + std::abs(d) * slope)) < 1e-15);
    }
    CHECK(t.at(0, 1) != t.at(1, 1));  // each head draws its own ramp
  }
  auto pos2d = make_positional(test::attention_options(fastrpb2d_options(false, 3, 5), 2, 4));
  CHECK(weight_of(*pos2d).shape() == Shape{2, 2 * 5 - 1});
}

TEST_CASE("fastrpb: bad options and inputs are refused, naming the values") {
  const auto make = [](const Options& opt, int64_t max_len) {
    return make_positional(test::attention_options(opt, 2, 4, max_len));
  };
  const auto values = [](int64_t len) { return Var(zeros({1, 2, len, 4}, f64)); };
  CHECK_THROWS_WITH_AS(make(fastrpb_options(false, 0, 0), 0),
                       "[positional fastrpb] needs max_len > 0, from its option max_len or the "
                       "layer's max_len; got 0",
                       Error);
  Options bad = fastrpb_options(false, 0, 0);
  bad.set("parameterization", "diagonal");
  CHECK_THROWS_WITH_AS(
      make(bad, 8),
      "[positional fastrpb] parameterization must be full or symmetric, got 'diagonal'", Error);
  CHECK_THROWS_WITH_AS(make(fastrpb_options(false, -1, 0), 8),
                       "[positional fastrpb] special_tokens_front and special_tokens_back must be "
                       ">= 0, got -1 and 0",
                       Error);
  CHECK_THROWS_WITH_AS(make(fastrpb_options(false, 1, 1), 2),
                       "[positional fastrpb] max_len 2 leaves no content token besides 1 + 1 "
                       "special tokens",
                       Error);

  auto pos = make(fastrpb_options(false, 0, 0), 8);
  CHECK_THROWS_WITH_AS(pos->output_term(values(7), 5, AttentionInputs{}),
                       "[positional fastrpb] needs as many queries as keys, or causal queries "
                       "after a memory (W relates positions of one sequence), got 5 queries and 7 "
                       "keys (causal false)",
                       Error);
  auto framed = make(fastrpb_options(false, 1, 0), 8);
  CHECK_THROWS_WITH_AS(framed->output_term(values(7), 5, AttentionInputs{Tensor(), true, nullptr}),
                       "[positional fastrpb] queries after a memory need special_tokens_front "
                       "and special_tokens_back 0, got 1 and 0 (5 of 7 keys)",
                       Error);
  CHECK(framed->why_no_memory() ==
        "queries after a memory need special_tokens_front and special_tokens_back 0, got 1 and 0");
  CHECK(pos->why_no_memory().empty());
  CHECK(pos->relates_one_sequence());
  // Sizes past any machine are refused by name before arithmetic on them overflows (2^62 left
  // FastRPB a [4, 0] weight and a "[toeplitz] weights must be ..." error at the first step).
  CHECK_THROWS_WITH_AS(make(fastrpb_options(false, 0, 0), int64_t{1} << 62),
                       "[positional fastrpb] max_len 4611686018427387904 is larger than any "
                       "machine holds (at most 2^40)",
                       Error);
  CHECK_THROWS_WITH_AS(make(fastrpb_options(false, INT64_MAX, 0), 8),
                       "[positional fastrpb] special_tokens_front 9223372036854775807 is larger "
                       "than any machine holds (at most 2^40)",
                       Error);
  CHECK_THROWS_WITH_AS(
      pos->output_term(values(9), 9, AttentionInputs{}),
      "[positional fastrpb] 9 content tokens exceed the 8 its weights cover (max_len 8)", Error);

  Options no_grid = fastrpb_options(false, 0, 0);
  no_grid.set("type", "fastrpb2d");
  CHECK_THROWS_WITH_AS(make(no_grid, 0),
                       "[positional fastrpb2d] grid must be [rows, cols] with positive sizes and "
                       "at most 2^40 pixels, got [] (the "
                       "default, a square of the layer's content tokens, needs a square number of "
                       "them)",
                       Error);
  auto pos2d = make(fastrpb2d_options(false, 3, 5), 0);
  CHECK_THROWS_WITH_AS(pos2d->output_term(values(14), 14, AttentionInputs{}),
                       "[positional fastrpb2d] a sequence of 14 tokens does not fit the grid 3x5 "
                       "= 15 plus 0 + 0 special tokens",
                       Error);
  AttentionInputs causal;
  causal.causal = true;
  CHECK_THROWS_WITH_AS(pos2d->output_term(values(15), 15, causal),
                       "[positional fastrpb2d] cannot be causal: its weights model distances in "
                       "both directions on the grid, not an order of pixels",
                       Error);
}

TEST_CASE("fastrpb: CUDA matches CPU, 1-D and 2-D, forward and gradients") {
  // f32 with weights in [-0.1, 0.1) and V and the output gradient in [-0.25, 0.25): outputs and
  // gradients stay below ~1 (the weight gradient sums B·D·L products), so the rounding of either
  // FFT backend (~1e-7 of the largest value) stays under the harness tolerance (rtol 1e-5,
  // atol 1e-6) even for entries near zero.
  const auto run = [](const std::shared_ptr<Positional>& pos, bool causal) {
    return [pos, causal](const std::vector<Tensor>& x) {
      pos->to(x[0].device());
      pos->zero_grad();
      Var v(x[0], true);
      const Var y = pos->output_term(v, x[0].size(2), AttentionInputs{x[1], causal, nullptr});
      y.backward(x[2]);
      return std::vector<Tensor>{y.value(), v.grad(), pos->parameters().at(0).grad()};
    };
  };
  const auto inputs = [](int64_t len) {
    return std::vector<Tensor>{test::random_tensor({2, 3, len, 5}, DType::f32, 51, -0.25, 0.25),
                               test::padding_mask(len, {4, 0}),
                               test::random_tensor({2, 3, len, 5}, DType::f32, 52, -0.25, 0.25)};
  };
  test::check_cuda_matches_cpu(
      "fastrpb", run(build(fastrpb_options(false, 1, 0), 3, 40, DType::f32, 53, 0.1), true),
      inputs(33));
  test::check_cuda_matches_cpu(
      "fastrpb2d",
      run(build(fastrpb2d_options(true, 7, 4, 1, 1), 3, 0, DType::f32, 54, 0.1), false),
      inputs(30));
}
