// The feature maps of linear attention beyond equality with their loops: sikf's shift invariance
// and overflow safety, every map's width and sign (dpfp: F = 2 D nu), performer's orthogonal
// blocks, chi(D) row lengths, redraw schedule, and its approximation of the softmax kernel.
#include <cmath>

#include "autograd/functions.h"
#include "layers/attention/catalog.h"
#include "layers/attention/feature_map.h"
#include "tests/layers/linear_naive.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;
using Kv = std::vector<std::pair<std::string, std::string>>;

std::shared_ptr<FeatureMap> build_map(const Kv& kv, int64_t head_dim) {
  return make_feature_map(test::attention_options(test::options("attention", kv), 2, head_dim),
                          "elu1");
}

Tensor projection_of_map(const FeatureMap& map) {
  return map.named_buffers().at(0).second;  // "projection"
}

// q, k shifted by c + 7 (b H + h) in batch row b, head h.
Tensor shifted(const Tensor& x, double c) {
  const int64_t B = x.size(0), H = x.size(1);
  std::vector<double> by_head;
  for (int64_t bh = 0; bh < B * H; ++bh) by_head.push_back(c + 7.0 * static_cast<double>(bh));
  return add(x, Tensor::from_vector(by_head, {B, H, 1, 1}));
}

}  // namespace

TEST_CASE("linear attention: sikf under a +800 shift of q and k per (b, h) is finite and exact") {
  CHECK_FALSE(std::isfinite(std::exp(800.0)));  // where plain exp overflows in f64
  const Tensor q = test::random_tensor({2, 2, 6, 4}, f64, 1);
  const Tensor k = test::random_tensor({2, 2, 7, 4}, f64, 2);
  const Tensor v = test::random_tensor({2, 2, 7, 3}, f64, 3);
  const auto attn = test::make_linear({{"feature_map", "sikf"}}, 2, 4);
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    const AttentionInputs in{test::padding_mask(7, {0, 3}), causal, nullptr};
    const Tensor moved =
        attn->forward(Var(shifted(q, 800)), Var(shifted(k, 800)), Var(v), in).value();
    // Every score grows by e^(1600 + 14 (b H + h)), so eps's share, eps e^(-1600 - ...), is 0
    // in f64: the exact result is the unshifted formula of q, k without eps.
    const auto [phi_q, phi_k] = test::naive_feature_map({{"feature_map", "sikf"}}, *attn, q, k, in);
    CHECK_CLOSE(moved, test::naive_linear_attention(phi_q, phi_k, v, in, 0.0), 1e-10, 1e-12);
  }
}

TEST_CASE("linear attention: sikf max shift stays finite and exact where the mean shift fails") {
  // q spread over [0, 2000]: the reference's mean shift leaves exponents near +1000 (inf), the
  // max shift leaves every exponent <= 0.
  const Tensor q = test::random_tensor({1, 2, 5, 4}, f64, 4, 0, 2000);
  const Tensor k = test::random_tensor({1, 2, 6, 4}, f64, 5);
  const Tensor v = test::random_tensor({1, 2, 6, 3}, f64, 6);
  const AttentionInputs in{test::padding_mask(6, {2}), true, nullptr};
  const auto attn = test::make_linear({{"feature_map", "sikf"}}, 2, 4);
  const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
  // The unshifted formula overflows here; each query's scores exceed e^(max q - 1), so eps's
  // share is below 1e-300 and the result is that of q less its row max, without eps.
  const Tensor q_low = sub(q, max(q, {3}, true));
  const auto [phi_q, phi_k] =
      test::naive_feature_map({{"feature_map", "sikf"}}, *attn, q_low, k, in);
  CHECK_CLOSE(got, test::naive_linear_attention(phi_q, phi_k, v, in, 0.0), 1e-10, 1e-12);
  const Tensor mean = test::make_linear({{"feature_map", "sikf"}, {"sikf_shift", "mean"}}, 2, 4)
                          ->forward(Var(q), Var(k), Var(v), in)
                          .value();
  CHECK_FALSE(all_finite(mean));
}

TEST_CASE("linear attention: sikf mean shift (the reference's) and max shift agree, eps included") {
  // Offsets -8 and -9 put the sums near eps, where a shift that eps did not follow showed.
  const Tensor q = shifted(test::random_tensor({2, 2, 5, 4}, f64, 7), -8);
  const Tensor k = shifted(test::random_tensor({2, 2, 5, 4}, f64, 8), -9);
  const Tensor v = test::random_tensor({2, 2, 5, 3}, f64, 9);
  const auto by_max = test::make_linear({{"feature_map", "sikf"}}, 2, 4);
  const auto by_mean = test::make_linear({{"feature_map", "sikf"}, {"sikf_shift", "mean"}}, 2, 4);
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    const AttentionInputs in{test::padding_mask(5, {1, 0}), causal, nullptr};
    CHECK_CLOSE(by_mean->forward(Var(q), Var(k), Var(v), in).value(),
                by_max->forward(Var(q), Var(k), Var(v), in).value(), 1e-10, 1e-12);
  }
}

TEST_CASE(
    "linear attention: every feature map is non-negative and feature_dim wide; dpfp F = 2 D nu") {
  const int64_t D = 4;
  const Tensor q = test::random_tensor({2, 2, 3, D}, f64, 10, -3, 3);
  const Tensor k = test::random_tensor({2, 2, 5, D}, f64, 11, -3, 3);
  std::vector<Kv> maps;
  for (const std::string& name : feature_map_names())
    for (const Kv& extra : test::naive_feature_map_twin(name).cases)
      maps.push_back(test::map_options(name, extra));
  maps.push_back({{"feature_map", "dpfp"}, {"nu", "7"}});  // nu = 2D - 1, the largest
  for (const Kv& kv : maps) {
    RELPOS_INFO("{} {}", kv.back().first, kv.back().second);
    const auto map = build_map(kv, D);
    const int64_t width = map->feature_dim(D);
    const Features phi = map->forward(Var(q), Var(k), {test::padding_mask(5, {0, 2})});
    CHECK(phi.q.shape() == Shape{2, 2, 3, width});
    CHECK(phi.k.shape() == Shape{2, 2, 5, width});
    for (const Tensor& features : {phi.q.value(), phi.k.value()}) {
      const auto values = features.to_vector<double>();
      CHECK(*std::min_element(values.begin(), values.end()) >= 0);
    }
  }
  for (const int64_t nu : {1, 3, 7})
    CHECK(build_map({{"feature_map", "dpfp"}, {"nu", std::to_string(nu)}}, D)->feature_dim(D) ==
          2 * D * nu);
}

TEST_CASE("linear attention: performer W has orthogonal rows within blocks of D, chi(D) lengths") {
  const int64_t D = 16;
  for (int64_t m : {40, 256}) {  // 40: blocks of 16, 16 and 8 rows
    INFO("m " << m);
    const Tensor w = projection_of_map(
        *build_map({{"feature_map", "performer"}, {"num_features", std::to_string(m)}}, D));
    REQUIRE(w.shape() == Shape{m, D});
    const auto wv = w.to_vector<double>();
    const auto dot = [&](int64_t r, int64_t s) {
      double total = 0;
      for (int64_t c = 0; c < D; ++c) total += wv[r * D + c] * wv[s * D + c];
      return total;
    };
    double worst = 0, mean_sq_length = 0;
    for (int64_t r = 0; r < m; ++r) {
      mean_sq_length += dot(r, r) / static_cast<double>(m);
      for (int64_t s = (r / D) * D; s < r; ++s)
        worst = std::max(worst, std::abs(dot(r, s)) / std::sqrt(dot(r, r) * dot(s, s)));
    }
    CHECK(worst < 1e-12);  // Gram-Schmidt in f64
    // |w_r|^2 ~ chi^2(D): mean D, variance 2D, so the mean of m of them is within 5 sigma.
    CHECK(std::abs(mean_sq_length - D) < 5 * std::sqrt(2.0 * D / static_cast<double>(m)));
  }
}

TEST_CASE(
    "linear attention: performer redraws W after redraw_interval training calls, not in eval") {
  const auto attn = test::make_linear(
      {{"feature_map", "performer"}, {"num_features", "8"}, {"redraw_interval", "3"}}, 2, 4);
  const Tensor x = test::random_tensor({1, 2, 3, 4}, f64, 12);
  const auto call = [&] {
    attn->forward(Var(x), Var(x), Var(x), {});
    return test::projection_of(*attn).to_vector<double>();
  };
  const auto first = test::projection_of(*attn).to_vector<double>();
  for (int i = 0; i < 3; ++i) CHECK(call() == first);  // training calls 1..3 use the first W
  const auto second = call();                          // call 4 draws a new one
  CHECK(second != first);
  attn->eval();
  for (int i = 0; i < 10; ++i) CHECK(call() == second);
  attn->train();
  for (int i = 0; i < 2; ++i) CHECK(call() == second);  // calls 5 and 6
  CHECK(call() != second);                              // call 7
}

TEST_CASE("linear attention: performer with 2048 features approximates softmax attention") {
  const int64_t D = 8, m = 2048, lq = 6, lk = 9;
  const auto attn = test::make_linear(
      {{"feature_map", "performer"}, {"num_features", std::to_string(m)}, {"redraw_interval", "0"}},
      1, D);
  const auto w = test::projection_of(*attn).to_vector<double>();
  const Tensor q = test::random_tensor({1, 1, lq, D}, f64, 13, -0.5, 0.5);
  const Tensor k = test::random_tensor({1, 1, lk, D}, f64, 14, -0.5, 0.5);
  const Tensor v = test::random_tensor({1, 1, lk, 3}, f64, 15);
  // The kernel from the definition, phi(x)_r = exp(w_r·x^ - |x^|^2 / 2) / sqrt(m), x^ = x D^-1/4,
  // against exp(q·k / sqrt(D)). For iid rows the relative variance is (exp(|q^ + k^|^2) - 1) / m,
  // about 0.6 / 2048 at these magnitudes (orthogonal rows only lower it): 0.1 is over 5 sigma.
  const auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
  const double scale = std::pow(static_cast<double>(D), -0.25);
  const auto phi = [&](const double* x, int64_t r) {
    double wx = 0, sq = 0;
    for (int64_t d = 0; d < D; ++d) {
      wx += w[r * D + d] * x[d] * scale;
      sq += x[d] * scale * x[d] * scale;
    }
    return std::exp(wx - sq / 2) / std::sqrt(static_cast<double>(m));
  };
  double worst = 0;
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j) {
      double estimate = 0, dot = 0;
      for (int64_t r = 0; r < m; ++r) estimate += phi(&qv[i * D], r) * phi(&kv[j * D], r);
      for (int64_t d = 0; d < D; ++d) dot += qv[i * D + d] * kv[j * D + d];
      worst = std::max(worst, std::abs(estimate / std::exp(dot / std::sqrt(double(D))) - 1));
    }
  CHECK(worst < 0.1);
  // Through the module (stabilizers and all): the output is a ratio of such estimates, so its
  // error is of the same order; v in [-1, 1] gives 0.05 absolute.
  const AttentionInputs in{test::padding_mask(lk, {2}), true, nullptr};
  const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
  const Tensor want = test::naive_softmax_from_scores(test::naive_scores(q, k), v, in, D);
  CHECK_CLOSE(got, want, 0, 0.05);
}
