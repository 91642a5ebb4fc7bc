// The worked example of docs/adding-attention.md (examples/custom_attention/sigmoid_attention.cpp,
// compiled into this suite): registered by name, equal to its formula by loops, gradchecked, usable
// from MultiHeadAttention; and the document shows the file exactly as it is.
#include <cmath>
#include <fstream>
#include <sstream>

#include "layers/attention/multi_head.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<Attention> sigmoid_attention(int64_t heads, int64_t dim) {
  return make_attention(
      test::attention_options(test::options("attention", {{"type", "sigmoid"}}), heads, dim));
}

}  // namespace

TEST_CASE("docs example: sigmoid attention equals its formula, padding and causal") {
  const int64_t B = 2, H = 2, Lq = 5, Lk = 7, D = 3;
  const Tensor q = test::random_tensor({B, H, Lq, D}, DType::f64, 1);
  const Tensor k = test::random_tensor({B, H, Lk, D}, DType::f64, 2);
  const Tensor v = test::random_tensor({B, H, Lk, D}, DType::f64, 3);
  const AttentionInputs in{test::padding_mask(Lk, {2, 0}), true, nullptr};
  const Tensor got = sigmoid_attention(H, D)->forward(Var(q), Var(k), Var(v), in).value();
  const auto s = test::naive_scores(q, k).to_vector<double>();
  const auto vv = v.to_vector<double>();
  const test::NaiveMask mask(in, Lq, Lk);
  std::vector<double> want(B * H * Lq * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t bh = b * H; bh < (b + 1) * H; ++bh)
      for (int64_t i = 0; i < Lq; ++i)
        for (int64_t j = 0; j < Lk; ++j) {
          if (mask.blocked(b, i, j)) continue;
          const double w =
              1 / (1 + std::exp(-(s[(bh * Lq + i) * Lk + j] / std::sqrt(3.0) - std::log(7.0))));
          for (int64_t d = 0; d < D; ++d)
            want[(bh * Lq + i) * D + d] += w * vv[(bh * Lk + j) * D + d];
        }
  CHECK_CLOSE(got, Tensor::from_vector(want, {B, H, Lq, D}), 1e-12, 1e-12);
}

TEST_CASE("docs example: sigmoid attention gradcheck (f64) and use from MultiHeadAttention") {
  const Tensor q = test::random_tensor({1, 2, 4, 3}, DType::f64, 4);
  const Tensor k = test::random_tensor({1, 2, 6, 3}, DType::f64, 5);
  const Tensor v = test::random_tensor({1, 2, 6, 3}, DType::f64, 6);
  auto attention = sigmoid_attention(2, 3);
  test::check_grad(
      [&](const std::vector<Var>& x) {
        return attention->forward(x[0], x[1], x[2], {test::padding_mask(6, {1}), false, nullptr});
      },
      {q, k, v});
  MultiHeadAttentionConfig c;
  c.model_dim = 6;
  c.num_heads = 2;
  c.attention = test::options("attention", {{"type", "sigmoid"}, {"bias", "-1.5"}});
  MultiHeadAttention layer(c);
  CHECK(layer.attention().name() == "sigmoid");
  CHECK(layer.forward(Var(test::random_tensor({2, 5, 6}, DType::f32, 7))).shape() ==
        Shape{2, 5, 6});
}

TEST_CASE("docs example: docs/adding-attention.md shows the example file as it is") {
  const std::string doc = read_file(RELPOS_SOURCE_DIR "/docs/adding-attention.md");
  const std::string code =
      read_file(RELPOS_SOURCE_DIR "/examples/custom_attention/sigmoid_attention.cpp");
  CHECK_MESSAGE(doc.find("```cpp\n" + code + "```") != std::string::npos,
                "update the code block of docs/adding-attention.md from the example file");
}
