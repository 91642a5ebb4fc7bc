// cosformer (layers/attention/feature_maps/cosformer.cpp): its naive twin, which the generic
// tests run (linear attention against loops, gradchecks, CPU ≡ CUDA, every encoding, the language
// models with memory), and the properties of the map itself: the similarity is cos-re-weighted
// by distance, M defaults to max_len, and positions beyond M are refused.
#include <cmath>
#include <numbers>

#include "autograd/functions.h"
#include "layers/attention/feature_map.h"
#include "tests/layers/linear_naive.h"

using namespace relpos;

namespace {

double cos_weight(int64_t distance, double m) {
  return std::cos(std::numbers::pi * static_cast<double>(distance) / (2 * m));
}

// [relu(x) cos(pi p / 2M), relu(x) sin(pi p / 2M)] of one row at position p (Qin et al. eq. 11).
RELPOS_REGISTER_NAIVE_FEATURE_MAP(
    "cosformer", test::NaiveFeatureMapTwin{
                     [](const Options& o, const Attention&) -> test::NaivePhi {
                       const auto m = static_cast<double>(o.require<int64_t>("cosformer_len"));
                       return [m](const double* x, int64_t D, int64_t position) {
                         const double angle =
                             std::numbers::pi * static_cast<double>(position) / (2 * m);
                         std::vector<double> out(2 * D);
                         for (int64_t d = 0; d < D; ++d) {
                           out[d] = std::max(x[d], 0.0) * std::cos(angle);
                           out[D + d] = std::max(x[d], 0.0) * std::sin(angle);
                         }
                         return out;
                       };
                     },
                     {{{"cosformer_len", "40"}}}});

std::shared_ptr<FeatureMap> build(const test::Kv& kv, int64_t max_len) {
  return make_feature_map(
      test::attention_options(test::options("attention", test::map_options("cosformer", kv)), 2, 4,
                              max_len),
      "elu1");
}

}  // namespace

TEST_CASE(
    "cosformer: phi(q_i)·phi(k_j) = relu(q_i)·relu(k_j) cos(pi (i - j) / 2M), after a memory") {
  const int64_t lq = 5, lk = 9, M = 12;
  const Tensor q = test::random_tensor({1, 2, lq, 4}, DType::f64, 1);
  const Tensor k = test::random_tensor({1, 2, lk, 4}, DType::f64, 2);
  AttentionInputs in;
  in.causal = true;  // queries after a memory of 4 keys: at positions 4 .. 8
  const Features phi =
      build({{"cosformer_len", std::to_string(M)}}, 0)->forward(Var(q), Var(k), in);
  CHECK(phi.q.shape() == Shape{1, 2, lq, 8});
  const auto pq = phi.q.value().to_vector<double>(), pk = phi.k.value().to_vector<double>();
  const auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) {
        double features = 0, relus = 0;
        for (int64_t f = 0; f < 8; ++f)
          features += pq[(h * lq + i) * 8 + f] * pk[(h * lk + j) * 8 + f];
        for (int64_t d = 0; d < 4; ++d)
          relus +=
              std::max(qv[(h * lq + i) * 4 + d], 0.0) * std::max(kv[(h * lk + j) * 4 + d], 0.0);
        CHECK(features == doctest::Approx(relus * cos_weight(4 + i - j, M)).epsilon(1e-12));
      }
}

TEST_CASE("cosformer: M defaults to the layer's max_len; positions beyond M and no M are refused") {
  const Tensor q = test::random_tensor({1, 2, 6, 4}, DType::f64, 3);
  const Features by_default = build({}, 10)->forward(Var(q), Var(q), {});
  const Features explicit_m = build({{"cosformer_len", "10"}}, 11)->forward(Var(q), Var(q), {});
  CHECK_CLOSE(by_default.q.value(), explicit_m.q.value(), 0, 0);
  CHECK(test::error_of([&] {
          build({{"cosformer_len", "4"}}, 0)->forward(Var(q), Var(q), {});
        }) ==
        "[feature_map cosformer] positions up to 5 exceed cosformer_len 4 (default: the model's "
        "max_len, kept from training): the re-weighting cos(pi (i - j) / 2M) would turn "
        "negative");
  // Refused when built where the layer's max_len is known (it failed at the first batch long
  // enough, a training step or two in).
  CHECK(test::error_of([&] {
          build({{"cosformer_len", "4"}}, 10);
        }) ==
        "[feature_map cosformer] cosformer_len 4 is shorter than the layer's positions (up to 9: "
        "max_len 10); the re-weighting cos(pi (i - j) / 2M) would turn negative");
  CHECK(test::error_of([&] { build({}, 0); }) ==
        "[feature_map cosformer] cosformer_len must be > 0 (its default, the layer's max_len, is "
        "not known here), got 0");
  CHECK(build({}, 10)->uses_positions());
}
