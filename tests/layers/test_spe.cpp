// sinspe and convspe (stochastic positional encoding) against their naive twins (spe_naive.h):
// codes, the gated filter with Lq != Lk at the inputs' positions, stationarity of the codes'
// cross-covariance as R grows, gradcheck, memory linear in L, MultiHeadAttention + softmax end to
// end, eval determinism, refused options, and CPU ≡ CUDA.
#include "layers/attention/multi_head.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/spe_naive.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;
using Values = std::vector<std::pair<std::string, std::string>>;

// The encoding built from `values` (plus grid, when given) for `heads` heads of size `dim`.
// Its parameters are drawn from `gen` when given (the draws then do not depend on the tests run
// before), else from the shared generator of test::attention_options.
std::shared_ptr<StochasticPositional> make_spe(const Values& values, int64_t heads, int64_t dim,
                                               const std::vector<std::string>& grid = {},
                                               DType dtype = f64, Generator* gen = nullptr) {
  Options opt = test::options("positional", values);
  if (!grid.empty()) opt.set_list("grid", grid);
  AttentionOptions attention = test::attention_options(opt, heads, dim, 0, dtype);
  if (gen != nullptr) attention.gen = gen;
  auto spe = std::dynamic_pointer_cast<StochasticPositional>(make_positional(attention));
  REQUIRE(spe != nullptr);
  return spe;
}

// The encodings under test: name, options, grid ({} for 1-D).
struct Config {
  std::string what;
  Values values;
  std::vector<std::string> grid;
};
const std::vector<Config>& configs() {
  static const std::vector<Config> all{
      {"sinspe", {{"type", "sinspe"}, {"num_realizations", "5"}, {"num_sines", "3"}}, {}},
      {"convspe", {{"type", "convspe"}, {"num_realizations", "5"}, {"kernel_size", "4"}}, {}},
      {"convspe shared",
       {{"type", "convspe"}, {"num_realizations", "4"}, {"kernel_size", "3"}, {"shared", "true"}},
       {}},
      {"convspe 2-D",
       {{"type", "convspe"}, {"num_realizations", "3"}, {"kernel_size", "2"}},
       {"3", "5"}},
  };
  return all;
}

int64_t rows_of(const Config& c) {
  return c.grid.empty() ? 1 : std::stoll(c.grid[0]);
}

}  // namespace

TEST_CASE("spe: codes equal the explicit sums (sinspe, convspe 1-D, shared, 2-D), odd lengths") {
  // f64; the FFT correlation and the angle-addition sinusoids round differently from the loops.
  for (const Config& c : configs()) {
    auto spe = make_spe(c.values, 2, 3, c.grid);
    for (int64_t len : c.grid.empty() ? std::vector<int64_t>{1, 7, 13} : std::vector<int64_t>{15}) {
      INFO(c.what << " L " << len);
      Generator gen(31);
      const Tensor noise = spe->draw_noise(len, gen, f64, Device::cpu());
      const SpeCodes got = spe->codes(noise, len);
      const test::NaiveCodes want = test::naive_codes(*spe, noise, rows_of(c), len / rows_of(c));
      CHECK_CLOSE(got.qbar.value(), want.qbar, 1e-10, 1e-12);
      CHECK_CLOSE(got.kbar.value(), want.kbar, 1e-10, 1e-12);
    }
  }
}

TEST_CASE(
    "spe: transform_qk is the gated filter on the eval draw at the inputs' positions, Lq != Lk "
    "(causal: after a memory; otherwise from 0 or query_start)") {
  for (const Config& c : configs()) {
    for (const char* gated : {"true", "false"}) {
      Values values = c.values;
      values.push_back({"gated", gated});
      values.push_back({"eval_seed", "17"});
      auto spe = make_spe(values, 2, 3, c.grid);
      spe->eval();
      const std::vector<std::pair<int64_t, int64_t>> lengths =
          c.grid.empty() ? std::vector<std::pair<int64_t, int64_t>>{{7, 7}, {4, 9}, {9, 5}}
                         : std::vector<std::pair<int64_t, int64_t>>{{15, 15}};
      for (auto [lq, lk] : lengths) {
        RELPOS_INFO("{} gated {} Lq {} Lk {}", c.what, gated, lq, lk);
        const Tensor q = test::random_tensor({2, 2, lq, 3}, f64, 1);
        const Tensor k = test::random_tensor({2, 2, lk, 3}, f64, 2);
        AttentionInputs causal, shifted;
        causal.causal = true;
        shifted.query_start = 2;
        for (const AttentionInputs& in : {AttentionInputs{}, causal, shifted}) {
          if (!c.grid.empty() && in.query_start > 0) continue;  // a grid places every pixel
          const int64_t offset = in.query_offset(lq, lk);
          INFO("query 0 at position " << offset);
          const auto [q_hat, k_hat] = spe->transform_qk(Var(q), Var(k), in);
          CHECK(q_hat.shape() == Shape{2, 2, lq, spe->qk_dim(3)});
          const auto [want_q, want_k] = test::naive_spe_transform(*spe, q, k, rows_of(c), offset);
          CHECK_CLOSE(q_hat.value(), want_q, 1e-10, 1e-12);
          CHECK_CLOSE(k_hat.value(), want_k, 1e-10, 1e-12);
        }
      }
    }
  }
}

TEST_CASE("spe: the codes' cross-covariance is stationary and approaches the kernel as R grows") {
  // Σ_r Q̄_m K̄_n over R independent realizations: its distance from its expectation (a function
  // of m − n only) shrinks as 1/sqrt(R) in units of the codes' norms (listed on failure).
  struct Case {
    Config config;
    int64_t len, cols;
  };
  const std::vector<Case> cases{
      {{"sinspe", {{"type", "sinspe"}, {"num_sines", "3"}}, {}}, 12, 12},
      {{"convspe", {{"type", "convspe"}, {"kernel_size", "5"}}, {}}, 12, 12},
      {{"convspe 2-D", {{"type", "convspe"}, {"kernel_size", "3"}}, {"4", "5"}}, 20, 5},
  };
  for (const Case& c : cases) {
    std::vector<test::Stationarity> errors;
    std::string log;
    for (int64_t r : {16, 256, 4096}) {
      Values values = c.config.values;
      values.push_back({"num_realizations", std::to_string(r)});
      Generator parameters(7);  // the same encoding at every R; only the realizations grow
      auto spe = make_spe(values, 2, 2, c.config.grid, f64, &parameters);
      test::SpeKernel kernel;
      if (spe->name() == "sinspe") {
        // Frequencies spread over (0, π) rad per step so the kernel varies within 12 positions.
        test::parameter(*spe, "freqs").set_value(test::random_tensor({2, 2, 3}, f64, 5, -3, 3));
        kernel = test::sine_kernel(test::parameter(*spe, "freqs").value(),
                                   test::parameter(*spe, "offsets").value(),
                                   test::parameter(*spe, "gains").value(), r);
      } else {
        kernel = test::conv_kernel(test::parameter(*spe, "conv_q.weight").value(),
                                   test::parameter(*spe, "conv_k.weight").value(), 2, r);
      }
      Generator gen(99);
      const SpeCodes codes = spe->codes(spe->draw_noise(c.len, gen, f64, Device::cpu()), c.len);
      errors.push_back(test::stationarity(codes.qbar.value(), codes.kbar.value(), c.cols, kernel));
      log += fmt::format(" R {}: spread {:.4f}, distance to the kernel {:.4f};", r,
                         errors.back().spread, errors.back().kernel_error);
    }
    INFO(c.config.what << log);
    for (size_t i = 1; i < errors.size(); ++i) {
      CHECK(errors[i].spread < errors[i - 1].spread);
      CHECK(errors[i].kernel_error < errors[i - 1].kernel_error);
    }
    // At R = 4096, 1/sqrt(R) ≈ 0.016: the largest of ~10^3 entries stays within ~6 times that.
    CHECK(errors.back().spread < 0.1);
    CHECK(errors.back().kernel_error < 0.1);
  }
}

TEST_CASE("spe: gradcheck (f64) of codes and gated filter through every parameter, noise fixed") {
  Generator gen(7);
  const Tensor q = test::random_tensor({1, 2, 3, 2}, f64, 11);
  const Tensor k = test::random_tensor({1, 2, 4, 2}, f64, 12);
  const Tensor gate = test::random_tensor({2, 2}, f64, 13);
  const Tensor gate_noise = randn({2, 2, 3}, gen, 0, 1, f64);
  // q̂ and k̂ (Lq = 3, Lk = 4: codes for 4 positions, queries on the last 3) as one vector.
  auto filtered = [&](const std::vector<Var>& x, SpeCodes c, int64_t len) {
    c.qbar = slice(c.qbar, 1, len - 3, len);
    const auto [q_hat, k_hat] = spe_filter(x[0], x[1], c, x[2], gate_noise);
    return cat({flatten(q_hat), flatten(k_hat)}, 0);
  };
  SUBCASE("sinspe") {
    const Tensor noise = randn({2, 2, 4, 3}, gen, 0, 1, f64);  // K = 2, R = 3
    test::check_grad(
        [&](const std::vector<Var>& x) {
          return filtered(x, sine_spe_codes(x[3], x[4], x[5], noise, 4), 4);
        },
        {q, k, gate, test::random_tensor({2, 2, 2}, f64, 14, -2, 2),
         test::random_tensor({2, 2, 2}, f64, 15, -2, 2), test::random_tensor({2, 2, 2}, f64, 16)});
  }
  SUBCASE("convspe 1-D, kernel 3") {
    const Tensor noise = randn({2, 2, 3, 4 + 2}, gen, 0, 1, f64);
    test::check_grad(
        [&](const std::vector<Var>& x) {
          return filtered(x, conv_spe_codes(x[3], x[4], noise, 1, 4), 4);
        },
        {q, k, gate, test::random_tensor({4, 1, 3}, f64, 17),
         test::random_tensor({4, 1, 3}, f64, 18)});
  }
  SUBCASE("convspe 2-D, grid 2x2, kernel 2x2") {
    const Tensor noise = randn({2, 2, 3, 3 * 3}, gen, 0, 1, f64);
    test::check_grad(
        [&](const std::vector<Var>& x) {
          return filtered(x, conv_spe_codes(x[3], x[4], noise, 2, 2), 4);
        },
        {q, k, gate, test::random_tensor({4, 1, 2, 2}, f64, 19),
         test::random_tensor({4, 1, 2, 2}, f64, 20)});
  }
}

TEST_CASE("spe: gradcheck (f64) through MultiHeadAttention + softmax in eval, causal, padded") {
  for (const Values& values :
       {Values{{"type", "sinspe"}, {"num_realizations", "3"}, {"num_sines", "2"}},
        Values{{"type", "convspe"}, {"num_realizations", "3"}, {"kernel_size", "2"}}}) {
    INFO(values[0].second);
    Generator gen(3);
    MultiHeadAttention mha(
        MultiHeadAttentionConfig{.model_dim = 4,
                                 .num_heads = 2,
                                 .positional = test::options("positional", values),
                                 .dtype = f64,
                                 .gen = &gen});
    mha.eval();
    const Tensor mask = test::padding_mask(5, {1});
    test::check_grad([&](const std::vector<Var>& x) { return mha.forward(x[0], mask, true); },
                     {test::random_tensor({1, 5, 4}, f64, 21)});
  }
}

TEST_CASE("spe: MultiHeadAttention + softmax on R features equals the naive pipeline") {
  // x -> q, k, v (projections by core matmul) -> q̂, k̂ by the naive twins -> softmax over R
  // features by loops -> output projection. Causal and not, padded and not.
  const int64_t B = 2, H = 2, D = 3;
  for (const Config& c : configs()) {
    const int64_t len = c.grid.empty() ? 7 : 15;
    Generator gen(4);
    Options positional = test::options("positional", c.values);
    if (!c.grid.empty()) positional.set_list("grid", c.grid);
    MultiHeadAttention mha(MultiHeadAttentionConfig{
        .model_dim = H * D, .num_heads = H, .positional = positional, .dtype = f64, .gen = &gen});
    mha.eval();
    auto* spe = dynamic_cast<StochasticPositional*>(mha.positional());
    REQUIRE(spe != nullptr);
    const Tensor x = test::random_tensor({B, len, H * D}, f64, 22);
    auto heads_of = [&](const char* proj) {  // [B, L, H·D] -> [B, H, L, D]
      const Tensor y = matmul(x, test::parameter(mha, proj).value(), false, true);
      return y.reshape({B, len, H, D}).permute({0, 2, 1, 3}).contiguous();
    };
    const Tensor q = heads_of("q_proj.weight"), k = heads_of("k_proj.weight");
    const Tensor v = heads_of("v_proj.weight");
    for (bool causal : {false, true}) {
      for (bool masked : {false, true}) {
        INFO(c.what << " causal " << causal << " masked " << masked);
        const AttentionInputs in{masked ? test::padding_mask(len, {2, 0}) : Tensor(), causal,
                                 nullptr};
        const Tensor got = mha.forward(Var(x), in.key_mask, causal).value();
        const auto [q_hat, k_hat] = test::naive_spe_transform(*spe, q, k, rows_of(c));
        const Tensor y = test::naive_softmax_from_scores(test::naive_scores(q_hat, k_hat), v, in,
                                                         spe->qk_dim(D));  // [B, H, L, D]
        const Tensor merged = y.permute({0, 2, 1, 3}).contiguous().reshape({B, len, H * D});
        CHECK_CLOSE(got,
                    matmul(merged, test::parameter(mha, "out_proj.weight").value(), false, true),
                    1e-10, 1e-12);
      }
    }
  }
}

TEST_CASE("spe: peak memory of forward + backward grows linearly in L (4L / L < 4.5)") {
  // Codes are [H, L, D, R] and the FFT buffers [H, D, R, ~L + k]: linear in L, with a constant
  // part (parameters, kernel), so the ratio is below 4; 4.5 allows for allocator rounding.
  for (const Config& c :
       {Config{"sinspe", {{"type", "sinspe"}, {"num_realizations", "16"}, {"num_sines", "4"}}, {}},
        Config{"convspe",
               {{"type", "convspe"}, {"num_realizations", "16"}, {"kernel_size", "16"}},
               {}},
        Config{"convspe 2-D",
               {{"type", "convspe"}, {"num_realizations", "16"}, {"kernel_size", "4"}},
               {"8", "32"}}}) {
    auto peak = [&](int64_t scale) {  // L = 256 scale; 2-D: a (8 scale) x 32 grid
      const int64_t len = 256 * scale;
      std::vector<std::string> grid;
      if (!c.grid.empty()) grid = {std::to_string(8 * scale), "32"};
      auto spe = make_spe(c.values, 2, 8, grid, DType::f32);
      const Var q(test::random_tensor({2, 2, len, 8}, DType::f32, 23), true);
      const Var k(test::random_tensor({2, 2, len, 8}, DType::f32, 24), true);
      return test::peak_bytes_of(Device::cpu(), [&] {
        const auto [q_hat, k_hat] = spe->transform_qk(q, k, AttentionInputs{});
        (sum(q_hat) + sum(k_hat)).backward();
      });
    };
    const double ratio = static_cast<double>(peak(4)) / static_cast<double>(peak(1));
    INFO(c.what << ": peak bytes 4L / L = " << ratio);
    CHECK(ratio < 4.5);
  }
}

TEST_CASE("spe: eval repeats the eval_seed draw; training draws fresh noise every forward") {
  for (const Config& c : configs()) {
    INFO(c.what);
    auto spe = make_spe(c.values, 2, 3, c.grid);
    const int64_t len = c.grid.empty() ? 9 : 15;
    const Var q(test::random_tensor({1, 2, len, 3}, f64, 25));
    const Var k(test::random_tensor({1, 2, len, 3}, f64, 26));
    auto run = [&] { return spe->transform_qk(q, k, AttentionInputs{}).first.value(); };
    auto distance = [](const Tensor& a, const Tensor& b) { return max(abs(sub(a, b))).item(); };
    const Tensor train_a = run(), train_b = run();
    CHECK(distance(train_a, train_b) > 1e-3);
    spe->eval();
    const Tensor eval_a = run(), eval_b = run();
    CHECK(distance(eval_a, eval_b) == 0.0);
    CHECK(distance(eval_a, train_a) > 1e-3);
  }
}

TEST_CASE("spe: the eval draw is prefix-stable, so a position's codes do not depend on L") {
  // Padding a batch to a longer L must not change the codes (and so the predictions) of the
  // positions a shorter sequence has.
  for (const Config& c : configs()) {
    if (!c.grid.empty()) continue;  // a grid fixes L
    INFO(c.what);
    auto spe = make_spe(c.values, 2, 3);
    spe->eval();
    const Var q(test::random_tensor({1, 2, 11, 3}, f64, 29));
    const Var k(test::random_tensor({1, 2, 11, 3}, f64, 30));
    const auto [q_long, k_long] = spe->transform_qk(q, k, AttentionInputs{});
    for (int64_t len : {1, 4, 10}) {
      INFO("L " << len);
      const auto [q_short, k_short] =
          spe->transform_qk(slice(q, 2, 0, len), slice(k, 2, 0, len), AttentionInputs{});
      CHECK_CLOSE(q_short.value(), q_long.value().slice(2, 0, len), 1e-12, 1e-14);
      CHECK_CLOSE(k_short.value(), k_long.value().slice(2, 0, len), 1e-12, 1e-14);
    }
  }
}

TEST_CASE("spe: bad options and shapes are refused by message") {
  auto build = [](const Values& values, const std::vector<std::string>& grid = {}) {
    make_spe(values, 2, 3, grid);
  };
  CHECK_THROWS_WITH_AS(build({{"type", "sinspe"}, {"num_realizations", "0"}}),
                       "[positional] num_realizations must be >= 1, got 0", Error);
  CHECK_THROWS_WITH_AS(build({{"type", "sinspe"}, {"num_sines", "-1"}}),
                       "[positional] num_sines must be >= 1, got -1", Error);
  CHECK_THROWS_WITH_AS(build({{"type", "convspe"}, {"eval_seed", "-2"}}),
                       "[positional convspe] eval_seed must be non-negative, got -2", Error);
  CHECK_THROWS_WITH_AS(build({{"type", "convspe"}, {"kernel_size", "0"}}),
                       "[positional] kernel_size must be >= 1, got 0", Error);
  CHECK_THROWS_WITH_AS(
      build({{"type", "convspe"}}, {"3"}),
      "[positional convspe] grid must be [rows, cols] with positive sizes and at most 2^40 "
      "pixels, got [3]",
      Error);
  // rows x cols past int64 read as "its 0 pixels" at the first step.
  CHECK_THROWS_WITH_AS(
      build({{"type", "convspe"}}, {"1099511627776", "1099511627776"}),
      "[positional convspe] grid must be [rows, cols] with positive sizes and at most 2^40 "
      "pixels, got [1099511627776, 1099511627776]",
      Error);
  CHECK_THROWS_WITH_AS(build({{"type", "convspe"}, {"num_sines", "3"}}),
                       "[positional] unknown option 'num_sines'; known: eval_seed, gated, grid, "
                       "kernel_size, num_realizations, shared, type",
                       Error);
  auto grid = make_spe({{"type", "convspe"}, {"kernel_size", "2"}}, 2, 3, {"3", "5"});
  const Var x15(zeros({1, 2, 15, 3}, f64)), x14(zeros({1, 2, 14, 3}, f64));
  CHECK_THROWS_WITH_AS(grid->transform_qk(x15, x14, AttentionInputs{}),
                       "[positional convspe] on the grid 3x5 queries and keys must be its 15 "
                       "pixels, got 15 queries and 14 keys",
                       Error);
  auto sine = make_spe({{"type", "sinspe"}}, 2, 3);
  CHECK_THROWS_WITH_AS(sine->transform_qk(Var(zeros({1, 2, 4, 5}, f64)), x14, AttentionInputs{}),
                       "[positional sinspe] q and k must be [batch, 2, length, 3], got q f64[1, 2, "
                       "4, 5] cpu and k f64[1, 2, 14, 3] cpu",
                       Error);
}

TEST_CASE("spe: CUDA matches CPU (f32, the same eval noise)") {
  for (const Config& c : configs()) {
    auto spe = make_spe(c.values, 2, 4, c.grid, DType::f32);
    spe->eval();
    const int64_t lq = c.grid.empty() ? 33 : 15, lk = c.grid.empty() ? 40 : 15;
    test::check_cuda_matches_cpu("spe " + c.what,
                                 [&](const std::vector<Tensor>& x) {
                                   spe->to(x[0].device());
                                   const auto [q_hat, k_hat] =
                                       spe->transform_qk(Var(x[0]), Var(x[1]), AttentionInputs{});
                                   return std::vector<Tensor>{q_hat.value(), k_hat.value()};
                                 },
                                 {test::random_tensor({2, 2, lq, 4}, DType::f32, 27, -0.5, 0.5),
                                  test::random_tensor({2, 2, lk, 4}, DType::f32, 28, -0.5, 0.5)});
  }
}
