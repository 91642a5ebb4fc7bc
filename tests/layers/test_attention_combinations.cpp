// Every attention variant × feature map × registered positional encoding through
// MultiHeadAttention: each combination either trains (finite output, a gradient for every
// parameter) or is refused with a message saying why, and the refused set is exactly the one the
// design expects. Plus linear attention + shaw end to end against the dense formula by loops.
#include <set>
#include <string>

#include "layers/attention/feature_map.h"
#include "layers/attention/multi_head.h"
#include "layers/attention/shaw.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/linear_naive.h"

using namespace relpos;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Variant {
  std::string label;
  Pairs options;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"softmax", {{"type", "softmax"}}},
      {"linear/elu1", {{"type", "linear"}, {"feature_map", "elu1"}}},
      {"linear/relu", {{"type", "linear"}, {"feature_map", "relu"}}},
      {"linear/sikf", {{"type", "linear"}, {"feature_map", "sikf"}}},
      {"linear/dpfp", {{"type", "linear"}, {"feature_map", "dpfp"}}},
      {"linear/performer",
       {{"type", "linear"}, {"feature_map", "performer"}, {"num_features", "8"}}},
      {"rel_xl", {{"type", "rel_xl"}}},
      {"sigmoid", {{"type", "sigmoid"}}},  // docs/examples: a variant without positional hooks
  };
  return v;
}

constexpr int64_t kLen = 9;  // a 3 x 3 grid for fastrpb2d

// Options for an encoding by name, sized for kLen.
Options positional_options(const std::string& name) {
  Options opt("positional");
  opt.set("type", name);
  if (name == "fastrpb" || name == "skew") opt.set("max_len", kLen);
  if (name == "fastrpb2d") opt.set_list("grid", {"3", "3"});
  if (name == "shaw") opt.set("window", 2);
  return opt;
}

// "" when the combination trains; the error's text when it is refused.
std::string try_combination(const Variant& variant, const std::string& positional) {
  MultiHeadAttentionConfig c;
  c.model_dim = 8;
  c.num_heads = 2;
  c.max_len = kLen;
  c.attention = test::options("attention", variant.options);
  if (!positional.empty()) c.positional = positional_options(positional);
  try {
    MultiHeadAttention layer(c);
    const bool causal = variant.label == "rel_xl";  // Transformer-XL is causal only
    const Var x(test::random_tensor({2, kLen, 8}, DType::f32, 11), true);
    const Var y = layer.forward(x, test::padding_mask(kLen, {0, 2}), causal);
    sum(y * y).backward();
    CHECK_MESSAGE(all_finite(y.value()), variant.label << " + " << positional);
    for (const auto& [name, p] : layer.named_parameters()) {
      RELPOS_INFO("{} + {}: {}", variant.label, positional, name);
      REQUIRE(p.grad().defined());
      CHECK(all_finite(p.grad()));
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("combinations: every variant x feature map x encoding trains or is refused, saying why") {
  std::set<std::string> refused;
  for (const Variant& variant : variants()) {
    std::vector<std::string> encodings{""};
    for (const std::string& name : positional_registry().names())
      if (name.rfind("test_", 0) != 0) encodings.push_back(name);
    for (const std::string& positional : encodings) {
      const std::string error = try_combination(variant, positional);
      if (error.empty()) continue;
      MESSAGE("refused: " << variant.label << " + " << positional << ": " << error);
      CHECK(error.find("[positional") == 0);  // the encoding explains itself
      refused.insert(variant.label + " + " + positional);
    }
  }
  const std::set<std::string> expected = {
      // skew's dense S has no place in kernelized attention (nor in a variant without hooks)
      "linear/elu1 + skew", "linear/relu + skew", "linear/sikf + skew", "linear/dpfp + skew",
      "linear/performer + skew", "sigmoid + skew",
      // shaw needs phi(q) as wide as its embeddings, or scores to add to
      "linear/dpfp + shaw", "linear/performer + shaw", "sigmoid + shaw",
      // fastrpb2d models no raster-order causality, and rel_xl is causal only
      "rel_xl + fastrpb2d"};
  CHECK(refused == expected);
}

TEST_CASE("combinations: naive shaw inside linear attention is refused as quadratic") {
  MultiHeadAttentionConfig c;
  c.model_dim = 8;
  c.num_heads = 2;
  c.attention = test::options("attention", {{"type", "linear"}});
  c.positional = test::options("positional", {{"type", "shaw"}, {"algorithm", "naive"}});
  CHECK(test::error_of([&] { MultiHeadAttention m(c); }).find("makes it quadratic") !=
        std::string::npos);
  c.attention = test::options("attention", {{"type", "softmax"}});  // scores are dense anyway
  CHECK(test::error_of([&] { MultiHeadAttention m(c); }).empty());
}

TEST_CASE(
    "combinations: linear attention + shaw equals the dense formula by loops for every feature "
    "map, at logits far from 0") {
  // Y_i = sum_j (phi(q_i)·phi(k_j) + phi(q_i)·w_clip(j - i)) v_j / (same without v_j + eps),
  // seed 003 §IV, with phi unshifted. Offsets of q and k move the exponential maps' key shift
  // c_k from about -12 to +10: a kernel term that missed the key factor would be off by e^(c_k).
  const int64_t B = 2, H = 2, L = 7, D = 4;
  const std::vector<std::pair<double, double>> offsets{{0, 0}, {3, -12}, {-6, 10}};
  for (const std::string& map : feature_map_registry().names()) {
    // performer keeps the head size with num_features = D; dpfp cannot (refused above).
    Pairs extra{{"feature_map", map}};
    if (map == "performer") extra.push_back({"num_features", std::to_string(D)});
    const auto attention = test::make_linear(extra, H, D);
    if (attention->caps().feature_dim != D) continue;
    auto shaw = make_positional(test::attention_options(
        test::options("positional", {{"type", "shaw"}, {"window", "2"}}), H, D));
    test::NaiveFeatureMap naive(map);
    if (map == "performer") naive.projection = test::projection_of(*attention);
    // performer's exponent is quadratic in x: a third of the offsets reaches a like range.
    const double scale = map == "performer" ? 0.35 : 1.0;
    for (auto [q_offset, k_offset] : offsets) {
      const Tensor q =
          add_scalar(test::random_tensor({B, H, L, D}, DType::f64, 1), q_offset * scale);
      const Tensor k =
          add_scalar(test::random_tensor({B, H, L, D}, DType::f64, 2), k_offset * scale);
      const Tensor v = test::random_tensor({B, H, L, D}, DType::f64, 3);
      for (bool causal : {false, true}) {
        RELPOS_INFO("{} offsets q {} k {} causal {}", map, q_offset, k_offset, causal);
        const AttentionInputs in{test::padding_mask(L, {1, 0}), causal, nullptr};
        const Tensor got = attend(*attention, shaw.get(), Var(q), Var(k), Var(v), in).value();

        const auto [phi_q, phi_k] = test::naive_feature_map(naive, q, k, in);
        const auto pq = phi_q.to_vector<double>(), vv = v.to_vector<double>();
        const auto w = static_cast<ShawPositional&>(*shaw).weight().value().to_vector<double>();
        const test::NaiveMask mask(in, L, L);
        std::vector<double> num(B * H * L * D, 0.0), den(B * H * L, 0.0);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t bh = b * H; bh < (b + 1) * H; ++bh)
            for (int64_t i = 0; i < L; ++i)
              for (int64_t j = 0; j < L; ++j) {
                if (mask.blocked(b, i, j)) continue;
                const int64_t row = std::clamp<int64_t>(j - i, -2, 2) + 2;
                double s = 0;  // S_rel[i, j] = phi(q_i) · w_clip(j - i)
                for (int64_t d = 0; d < D; ++d) s += pq[(bh * L + i) * D + d] * w[row * D + d];
                den[bh * L + i] += s;
                for (int64_t d = 0; d < D; ++d)
                  num[(bh * L + i) * D + d] += s * vv[(bh * L + j) * D + d];
              }
        const Tensor want = test::naive_linear_attention(phi_q, phi_k, v, in, 1e-6,
                                                         Tensor::from_vector(num, {B, H, L, D}),
                                                         Tensor::from_vector(den, {B, H, L, 1}));
        // Relative to the case's largest output: the shaw weights can be negative, so a
        // denominator may nearly cancel; rounding is a few ulps of the exponents' size.
        CHECK_CLOSE(got, want, 1e-8, 1e-8 * max(abs(want)).item());
      }
    }
  }
}
