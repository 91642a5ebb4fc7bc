// Every registered attention variant × feature map × positional encoding through
// MultiHeadAttention (enumerated from the registries, layers/attention/catalog.h): each
// combination either trains (finite output, a gradient for every parameter) or is refused by the
// encoding with a message saying why; the design's refusals are among them. What trains also
// trains with bf16 products, near its f32 output. Plus linear attention
// + shaw end to end against the dense formula by loops for every feature map.
#include <map>
#include <string>

#include "autograd/autocast.h"
#include "layers/attention/catalog.h"
#include "layers/attention/feature_map.h"
#include "layers/attention/multi_head.h"
#include "layers/attention/shaw.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/linear_naive.h"

using namespace relpos;

namespace {

constexpr int64_t kLen = 9;  // a 3 x 3 grid for the 2-D encodings' default square grid

// "" when the setup trains (finite output, a finite gradient for every parameter); the error's
// text when it is refused.
std::string try_combination(const AttentionSetup& setup) {
  MultiHeadAttentionConfig c;
  c.model_dim = 8;
  c.num_heads = 2;
  c.max_len = kLen;
  c.attention = setup.attention;
  c.positional = setup.positional;
  try {
    MultiHeadAttention layer(c);
    const Var x(test::random_tensor({2, kLen, 8}, DType::f32, 11), true);
    const Tensor mask = test::padding_mask(kLen, {0, 2});
    const Var y = layer.forward(x, mask, setup.causal);
    sum(y * y).backward();
    CHECK_MESSAGE(all_finite(y.value()), setup.name);
    for (const auto& [name, p] : layer.named_parameters()) {
      RELPOS_INFO("{}: {}", setup.name, name);
      REQUIRE(p.grad().defined());
      CHECK(all_finite(p.grad()));
    }
    // train.precision: bf16 (autograd/autocast.h) builds the same combination: it trains and
    // stays near f32 (bf16 keeps 8 bits of each product's operands), except where the f32
    // output is not a stable reference: SPE draws new noise at every forward, and the
    // normalizers of relu-based feature maps (relu, dpfp, cosformer) reach 0 when a query's
    // features all vanish, so any rounding moves such rows arbitrarily far.
    layer.zero_grad();
    Var y16;
    {
      const AutocastGuard bf16(DType::bf16);
      y16 = layer.forward(x, mask, setup.causal);
    }
    sum(y16 * y16).backward();
    CHECK_MESSAGE(all_finite(y16.value()), setup.name << " under bf16");
    CHECK_FALSE(test::same_bits(y16.value(), y.value()));
    const bool stable = setup.name.find("spe") == std::string::npos &&
                        setup.name.find("relu") == std::string::npos &&
                        setup.name.find("dpfp") == std::string::npos &&
                        setup.name.find("cosformer") == std::string::npos;
    if (stable) {
      const test::CloseReport near = test::compare_close(y16.value(), y.value(), 0.03, 0.03);
      CHECK_MESSAGE(near.ok, setup.name << " under bf16: " << near.detail);
    }
    for (const auto& [name, p] : layer.named_parameters()) {
      RELPOS_INFO("{} under bf16: {}", setup.name, name);
      REQUIRE(p.grad().defined());
      CHECK(all_finite(p.grad()));
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "combinations: every registered variant x feature map x encoding, bidirectional and causal, "
    "trains or is refused by the encoding or its host, saying why") {
  // The registries are the only lists: every variant (kernelized ones with each feature map),
  // in each form it runs in, with no encoding and with every registered one.
  std::map<std::string, std::string> refused;  // "host + encoding" -> why
  int64_t trained = 0;
  for (const AttentionSetup& host : attention_setups(false)) {
    std::vector<std::string> encodings{""};
    for (const std::string& name : positional_names()) encodings.push_back(name);
    for (const std::string& positional : encodings) {
      AttentionSetup s = host;
      if (!positional.empty()) s.positional = s.positional.with("type", positional);
      s.name += " + " + (positional.empty() ? "none" : positional);
      const std::string error = try_combination(s);
      if (error.empty()) {
        ++trained;
        continue;
      }
      MESSAGE("refused: " << s.name << ": " << error);
      CHECK_MESSAGE(!positional.empty(), s.name << ": a variant refuses no encoding at all");
      // By the encoding, or by a host that encodes positions itself (rel_xl hosts none).
      CHECK_MESSAGE((error.rfind("[positional", 0) == 0 ||
                     error.find("encodes relative positions itself") != std::string::npos),
                    s.name << ": " << error);
      refused[s.name] = error;
    }
  }
  CHECK(trained > 0);
  // The design's refusals, each for its reason (the set is not pinned: a new entry adds its
  // own): skew's dense S has no place in kernelized attention; shaw needs phi(q) as wide as its
  // embeddings (dpfp doubles it, performer draws 256 by default); fastrpb2d models no
  // raster-order causality; rel_xl encodes its positions itself and hosts no encoding.
  for (const char* name : {"linear_sikf + skew", "linear_elu1_causal + skew", "linear_dpfp + shaw",
                           "linear_performer + shaw", "rel_xl + fastrpb2d", "rel_xl + shaw",
                           "rel_xl_naive + skew", "softmax_causal + fastrpb2d"})
    CHECK_MESSAGE(refused.count(name) == 1, name);
  // ... and what must train.
  for (const char* name : {"linear_sikf + fastrpb", "linear_sikf_causal + fastrpb",
                           "linear_elu1 + shaw", "linear_sikf + sinspe", "softmax + skew",
                           "softmax_causal + shaw", "rel_xl + none", "linear_sikf + fastrpb2d"})
    CHECK_MESSAGE(refused.count(name) == 0, name);
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
  int64_t covered = 0;
  for (const std::string& map : feature_map_names()) {
    // The map's test cases that keep the head size (shaw needs phi(q) as wide as its
    // embeddings): performer's with num_features = D; dpfp never (refused above).
    for (const test::Kv& extra : test::naive_feature_map_twin(map).cases) {
      const test::Kv options = test::map_options(map, extra);
      const auto attention = test::make_linear(options, H, D, DType::f64, L);
      if (attention->caps().feature_dim != D) continue;
      ++covered;
      auto shaw = make_positional(test::attention_options(
          test::options("positional", {{"type", "shaw"}, {"window", "2"}}), H, D));
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

          const auto [phi_q, phi_k] = test::naive_feature_map(options, *attention, q, k, in);
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
  CHECK(covered >= 4);  // elu1, relu, sikf and performer at least
}
