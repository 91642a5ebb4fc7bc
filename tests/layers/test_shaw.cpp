// positional shaw against explicit loops from Shaw et al.'s definition (S[i, j] = q_i ·
// w_clip(j - p_i, -k, k), query i at position p_i): the score bias, softmax attention with it,
// and the kernelized terms S_rel·V and S_rel·1 of both algorithms (odd lengths, Lq != Lk,
// queries after a memory or from query_start, padding, causal, windows below and above the
// lengths); f64 gradchecks, peak memory, refusals, CPU ≡ CUDA.
#include <algorithm>
#include <string>

#include "layers/attention/multi_head.h"
#include "layers/attention/shaw.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;

std::shared_ptr<ShawPositional> make_shaw(int64_t window, const std::string& algorithm,
                                          int64_t head_dim, DType dtype = f64) {
  const Options opt = test::options(
      "positional",
      {{"type", "shaw"}, {"window", std::to_string(window)}, {"algorithm", algorithm}});
  auto shaw = std::dynamic_pointer_cast<ShawPositional>(
      make_positional(test::attention_options(opt, 2, head_dim, 0, dtype)));
  REQUIRE(shaw != nullptr);
  return shaw;
}

// S[b, h, i, j] = Σ_d q[b, h, i, d] · w[clip(j - (i + offset), -k, k) + k, d], by loops in f64:
// query i at position i + offset, key j at j.
Tensor naive_shaw_scores(const Tensor& q, const Tensor& w, int64_t k_len, int64_t offset) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), D = q.size(3);
  const int64_t k = (w.size(0) - 1) / 2;
  const auto qv = q.to(f64).to_vector<double>(), wv = w.to(f64).to_vector<double>();
  std::vector<double> s(B * H * Lq * k_len, 0.0);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < k_len; ++j) {
        const int64_t row = std::clamp(j - (i + offset), -k, k) + k;
        for (int64_t d = 0; d < D; ++d)
          s[(bh * Lq + i) * k_len + j] += qv[(bh * Lq + i) * D + d] * wv[row * D + d];
      }
  return Tensor::from_vector(s, {B, H, Lq, k_len});
}

// {Σ_j S_rel[i, j] v_j, Σ_j S_rel[i, j]} over the keys j query i may attend, by loops in f64.
std::pair<Tensor, Tensor> naive_kernel_terms(const Tensor& phi_q, const Tensor& v, const Tensor& w,
                                             const AttentionInputs& in) {
  const int64_t B = v.size(0), H = v.size(1), Lq = phi_q.size(2), Lk = v.size(2), Dv = v.size(3);
  const auto s = naive_shaw_scores(phi_q, w, Lk, in.query_offset(Lq, Lk)).to_vector<double>();
  const auto vv = v.to(f64).to_vector<double>();
  const test::NaiveMask mask(in, Lq, Lk);
  std::vector<double> num(B * H * Lq * Dv, 0.0), den(B * H * Lq, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t bh = b * H; bh < (b + 1) * H; ++bh)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lk; ++j) {
          if (mask.blocked(b, i, j)) continue;
          const double sij = s[(bh * Lq + i) * Lk + j];
          den[bh * Lq + i] += sij;
          for (int64_t d = 0; d < Dv; ++d)
            num[(bh * Lq + i) * Dv + d] += sij * vv[(bh * Lk + j) * Dv + d];
        }
  return {Tensor::from_vector(num, {B, H, Lq, Dv}), Tensor::from_vector(den, {B, H, Lq, 1})};
}

// A host with the given capabilities, for check_host; it never runs.
const std::vector<std::pair<int64_t, int64_t>> kLengths = {{7, 7}, {5, 9}, {9, 4}, {1, 1}};

}  // namespace

// Forward checks compare f64 results with f64 loops: only summation order differs, and the
// prefix/suffix differences of the linear algorithm lose a few ulps of sums of O(10): 1e-10.

TEST_CASE("shaw: score_bias equals the clipped-distance loops, odd lengths, Lq != Lk, windows") {
  for (int64_t window : {1, 3, 20}) {
    auto shaw = make_shaw(window, "auto", 5);
    for (auto [lq, lk] : kLengths) {
      // Non-causal from 0 or from query_start 3; causal after a memory of Lk - Lq keys.
      for (const auto& [causal, start] : {std::pair{false, -1}, {false, 3}, {true, -1}}) {
        if (causal && lq > lk) continue;
        RELPOS_INFO("window {} Lq {} Lk {} causal {} query_start {}", window, lq, lk, causal,
                    start);
        const Tensor q = test::random_tensor({2, 3, lq, 5}, f64, 1);
        AttentionInputs in;
        in.causal = causal;
        in.query_start = start;
        CHECK_CLOSE(shaw->score_bias(Var(q), lk, in).value(),
                    naive_shaw_scores(q, shaw->weight().value(), lk, in.query_offset(lq, lk)),
                    1e-12, 1e-12);
      }
    }
  }
}

TEST_CASE("shaw: softmax attention with shaw equals naive softmax over Q·Kᵀ + S") {
  auto shaw = make_shaw(3, "auto", 5);
  test::check_softmax_with_score_bias(
      *shaw,
      [&](const Tensor& q, int64_t lk, int64_t offset) {
        return naive_shaw_scores(q, shaw->weight().value(), lk, offset);
      },
      kLengths);
}

TEST_CASE("shaw: kernel_terms equal dense S_rel·V and S_rel·1, both algorithms, every case") {
  const int64_t B = 2, H = 2, D = 4, Dv = 3;
  for (int64_t window : {1, 2, 3, 12}) {
    for (auto [lq, lk] : kLengths) {
      for (const auto& [causal, start] : {std::pair{false, -1}, {false, 2}, {true, -1}}) {
        for (bool masked : {false, true}) {
          if (causal && lq > lk) continue;  // causal queries end with the keys (after a memory)
          RELPOS_INFO("window {} Lq {} Lk {} causal {} query_start {} masked {}", window, lq, lk,
                      causal, start, masked);
          const Tensor phi_q = test::random_tensor({B, H, lq, D}, f64, 5, 0, 1);
          const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 6);
          AttentionInputs in;
          in.causal = causal;
          in.query_start = start;
          if (masked) in.key_mask = test::padding_mask(lk, {lk / 3, 0});
          auto naive = make_shaw(window, "naive", D), linear = make_shaw(window, "linear", D);
          linear->weight() = naive->weight();
          const auto want = naive_kernel_terms(phi_q, v, naive->weight().value(), in);
          const auto [num_n, den_n] = naive->kernel_terms(Var(phi_q), Var(v), in);
          const auto [num_l, den_l] = linear->kernel_terms(Var(phi_q), Var(v), in);
          CHECK_CLOSE(num_n.value(), want.first, 1e-10, 1e-10);
          CHECK_CLOSE(den_n.value(), want.second, 1e-10, 1e-10);
          CHECK_CLOSE(num_l.value(), want.first, 1e-10, 1e-10);
          CHECK_CLOSE(den_l.value(), want.second, 1e-10, 1e-10);
          CHECK_CLOSE(num_l.value(), num_n.value(), 1e-10, 1e-10);
        }
      }
    }
  }
}

// Gradchecks (f64, central differences): the functions are polynomial in every input, so the
// harness's default tolerances hold with room to spare.

TEST_CASE("shaw: gradcheck (f64) of softmax + score_bias through q, k, v and the weight") {
  auto attn = make_attention(
      test::attention_options(test::options("attention", {{"type", "softmax"}}), 2, 3));
  auto shaw = make_shaw(2, "auto", 3);
  for (bool causal : {true, false}) {
    const int64_t lk = causal ? 5 : 6;
    AttentionInputs in{test::padding_mask(lk, {1, 0}), causal, shaw.get()};
    test::check_grad(
        [&](const std::vector<Var>& x) {
          shaw->weight() = x[3];
          return attn->forward(x[0], x[1], x[2], in);
        },
        {test::random_tensor({2, 2, 5, 3}, f64, 7), test::random_tensor({2, 2, lk, 3}, f64, 8),
         test::random_tensor({2, 2, lk, 2}, f64, 9), shaw->weight().value()});
  }
}

TEST_CASE("shaw: gradcheck (f64) of kernel_terms through phi(q), v and the weight") {
  for (const std::string algorithm : {"naive", "linear"}) {
    auto shaw = make_shaw(2, algorithm, 3);
    for (bool causal : {true, false}) {
      INFO(algorithm << " causal " << causal);
      const int64_t lk = causal ? 6 : 7;
      AttentionInputs in{test::padding_mask(lk, {2, 0}), causal, nullptr};
      test::check_grad(
          [&](const std::vector<Var>& x) {
            shaw->weight() = x[2];
            const auto [num, den] = shaw->kernel_terms(x[0], x[1], in);
            return cat({num, den}, 3);
          },
          {test::random_tensor({2, 2, 6, 3}, f64, 10, 0, 1),
           test::random_tensor({2, 2, lk, 2}, f64, 11), shaw->weight().value()});
    }
  }
}

TEST_CASE("shaw: linear kernel_terms memory grows linearly, naive quadratically; auto picks") {
  const int64_t D = 4, Dv = 4, window = 8;
  // Peak bytes of kernel_terms forward + backward, self attention of length n.
  auto peak = [&](const std::string& algorithm, int64_t n, int64_t k, int64_t value_dim) {
    auto shaw = make_shaw(k, algorithm, D);
    const Tensor phi_q = test::random_tensor({1, 1, n, D}, f64, 12, 0, 1);
    const Tensor v = test::random_tensor({1, 1, n, value_dim}, f64, 13);
    return test::peak_bytes_of(Device::cpu(), [&] {
      Var q(phi_q, true);
      const auto [num, den] = shaw->kernel_terms(q, Var(v, true), AttentionInputs{});
      (sum(num) + sum(den)).backward();
    });
  };
  const double linear_ratio =
      static_cast<double>(peak("linear", 2048, window, Dv)) / peak("linear", 512, window, Dv);
  const double naive_ratio =
      static_cast<double>(peak("naive", 2048, window, Dv)) / peak("naive", 512, window, Dv);
  INFO("linear ratio " << linear_ratio << " naive ratio " << naive_ratio);
  CHECK(linear_ratio < 4.5);
  CHECK(naive_ratio > 12);
  // auto takes the algorithm with the smaller estimated peak; at these sizes (away from the
  // break-even point) that is the one whose measured peak is smaller.
  struct Case {
    int64_t window, value_dim, n;
    ShawPositional::Algorithm want;
  };
  for (const Case c : {Case{8, 4, 16, ShawPositional::Algorithm::naive},
                       Case{8, 4, 64, ShawPositional::Algorithm::linear},
                       Case{32, 32, 64, ShawPositional::Algorithm::naive},
                       Case{8, 32, 256, ShawPositional::Algorithm::linear}}) {
    INFO("window " << c.window << " Dv " << c.value_dim << " N " << c.n);
    CHECK(make_shaw(c.window, "auto", D)->algorithm_for(c.n, c.n, c.value_dim) == c.want);
    const int64_t naive = peak("naive", c.n, c.window, c.value_dim);
    const int64_t linear = peak("linear", c.n, c.window, c.value_dim);
    CHECK(peak("auto", c.n, c.window, c.value_dim) == std::min(naive, linear));
  }
  CHECK(make_shaw(window, "naive", D)->algorithm_for(2048, 2048, Dv) ==
        ShawPositional::Algorithm::naive);
}

TEST_CASE("shaw: inside MultiHeadAttention its weight is positional.weight and is trained") {
  MultiHeadAttentionConfig c;
  c.model_dim = 6;
  c.num_heads = 2;
  c.max_len = 7;
  c.positional = test::options("positional", {{"type", "shaw"}, {"window", "2"}});
  c.dtype = f64;
  MultiHeadAttention mha(c);
  const Var x(test::random_tensor({2, 7, 6}, f64, 20));
  sum(mha.forward(x, test::padding_mask(7, {0, 3}), true)).backward();
  const auto params = mha.named_parameters();
  REQUIRE(params.back().first == "positional.weight");
  CHECK(params.back().second.grad().shape() == Shape{5, 3});
  CHECK(all_finite(params.back().second.grad()));
}

TEST_CASE("shaw: refusals name the problem") {
  CHECK_THROWS_WITH_AS(make_shaw(0, "auto", 4), doctest::Contains("window must be >= 1, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(make_shaw(2, "fast", 4), doctest::Contains("unknown algorithm 'fast'"),
                       Error);
  CHECK_THROWS_WITH_AS(make_positional(test::attention_options(
                           test::options("positional", {{"type", "shaw"}, {"windw", "3"}}), 2, 4)),
                       doctest::Contains("unknown option 'windw'"), Error);
  auto shaw = make_shaw(2, "auto", 4);
  CHECK_NOTHROW(shaw->check_host(test::TestHost({.forms_scores = true, .kernelized = false})));
  CHECK_NOTHROW(shaw->check_host(test::TestHost({.forms_scores = false, .kernelized = true})));
  CHECK_THROWS_WITH_AS(shaw->check_host(test::TestHost({})),
                       doctest::Contains("'test_host' neither forms scores nor is kernelized"),
                       Error);
  const Var v(zeros({1, 1, 5, 2}, f64));
  CHECK_THROWS_WITH_AS(
      shaw->kernel_terms(Var(zeros({1, 1, 3, 8}, f64)), v, AttentionInputs{}),
      doctest::Contains("[positional shaw] phi(q) must be [batch, heads, length, 4]"), Error);
  CHECK_THROWS_WITH_AS(shaw->score_bias(Var(zeros({1, 1, 3, 3}, f64)), 5, AttentionInputs{}),
                       doctest::Contains("q must be [batch, heads, length, 4]"), Error);
}

TEST_CASE("shaw: CUDA matches CPU (score_bias, kernel_terms naive and linear)") {
  // Inputs in [-0.5, 0.5]: f32 sums of 40 terms of size <= 0.25 stay within atol 1e-6.
  const Tensor q = test::random_tensor({2, 3, 33, 4}, DType::f32, 14, -0.5, 0.5);
  const Tensor v = test::random_tensor({2, 3, 40, 5}, DType::f32, 15, -0.5, 0.5);
  const Tensor mask = test::padding_mask(40, {3, 0}), self_mask = test::padding_mask(33, {0, 4});
  for (const std::string algorithm : {"naive", "linear"}) {
    auto shaw = make_shaw(6, algorithm, 4, DType::f32);
    const Tensor w = test::random_tensor(shaw->weight().shape(), DType::f32, 16, -0.5, 0.5);
    test::check_cuda_matches_cpu(
        "shaw " + algorithm,
        [&](const std::vector<Tensor>& x) {
          shaw->weight() = Var(x[2], true);
          const AttentionInputs cross{x[3], false, nullptr}, self{x[4], true, nullptr};
          const Var q(x[0]), v(x[1]), v_self(x[1].slice(2, 0, 33));
          const auto [num, den] = shaw->kernel_terms(q, v, cross);
          const auto [num_self, den_self] = shaw->kernel_terms(q, v_self, self);
          return std::vector<Tensor>{shaw->score_bias(q, 40, cross).value(), num.value(),
                                     den.value(), num_self.value(), den_self.value()};
        },
        {q, v, w, mask, self_mask});
  }
}
