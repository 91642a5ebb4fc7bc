// transformer_lm (layers/models/transformer_lm.cpp): its forward against the model's formula
// written out with loops (post-LN, one layer, causal softmax over each segment alone), the same
// function as causal_lm with softmax and learned positions, no state between segments, f64
// parameter gradients, and the configs it refuses.
#include <cmath>
#include <map>

#include "autograd/functions.h"
#include "tests/harness.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/lm_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;
using test::build_lm;
using test::random_tokens;
using test::tiny_lm_config;

namespace {

// The model's formula for one row of tokens [L] (post-LN, ReLU, tied output): x = E[t] + P[pos];
// per head, y_i = Σ_{j<=i} softmax_j(q_i·k_j / sqrt(D)) v_j; h = LN1(x + W_o y);
// out = LN2(h + fc2(relu(fc1(h)))); logits = out Eᵀ + b. -> [L, V]
Tensor naive_forward(const Module& model, const std::vector<int64_t>& tokens, int64_t heads) {
  const std::map<std::string, Var> p = test::params_of(model);
  const Tensor emb = p.at("embedding.weight").value(), pos = p.at("position.weight").value();
  const int64_t len = static_cast<int64_t>(tokens.size()), d = emb.size(1), dh = d / heads;
  Tensor x = zeros({len, d}, DType::f64);
  for (int64_t i = 0; i < len; ++i)
    for (int64_t c = 0; c < d; ++c)
      x.data<double>()[i * d + c] =
          emb.data<double>()[tokens[i] * d + c] + pos.data<double>()[i * d + c];
  const std::string a = "layers.0.attn.";
  const Tensor q = test::dense(x, p.at(a + "q_proj.weight"), Var());  // [L, d]
  const Tensor k = test::dense(x, p.at(a + "k_proj.weight"), Var());
  const Tensor v = test::dense(x, p.at(a + "v_proj.weight"), Var());
  Tensor y = zeros({len, d}, DType::f64);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i) {
      std::vector<double> s(i + 1);
      double top = -INFINITY, total = 0;
      for (int64_t j = 0; j <= i; ++j) {
        for (int64_t c = h * dh; c < (h + 1) * dh; ++c)
          s[j] += q.data<double>()[i * d + c] * k.data<double>()[j * d + c];
        s[j] /= std::sqrt(static_cast<double>(dh));
        top = std::max(top, s[j]);
      }
      for (double& e : s) total += e = std::exp(e - top);
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t c = h * dh; c < (h + 1) * dh; ++c)
          y.data<double>()[i * d + c] += s[j] / total * v.data<double>()[j * d + c];
    }
  const std::string l = "layers.0.";
  const Tensor h =
      test::naive_layer_norm(add(x, test::dense(y, p.at(a + "out_proj.weight"), Var())),
                             p.at(l + "ln1.weight"), p.at(l + "ln1.bias"));
  const Tensor inner = relu(test::dense(h, p.at(l + "mlp.fc1.weight"), p.at(l + "mlp.fc1.bias")));
  const Tensor out = test::naive_layer_norm(
      add(h, test::dense(inner, p.at(l + "mlp.fc2.weight"), p.at(l + "mlp.fc2.bias"))),
      p.at(l + "ln2.weight"), p.at(l + "ln2.bias"));
  return test::dense(out, p.at("embedding.weight"), p.at("output.bias"));
}

ModelConfig one_layer() {
  ModelConfig c = tiny_lm_config("transformer_lm");
  c.num_layers = 1;
  return c;
}

}  // namespace

TEST_CASE("transformer_lm: equals its formula written with loops, odd lengths") {
  auto model = build_lm(one_layer(), 3);
  model->eval();
  for (const int64_t len : {1, 5, 13}) {
    CAPTURE(len);
    const Tensor tokens = random_tokens(1, len, 11, 40 + len);
    std::vector<int64_t> row(tokens.data<int64_t>(), tokens.data<int64_t>() + len);
    const Tensor logits = model->forward(tokens, {}).logits.value().reshape({len, 11});
    // f64 throughout: the two orders of summation agree to rounding.
    CHECK_CLOSE(logits, naive_forward(*model, row, 2), 1e-10, 1e-12);
  }
}

TEST_CASE("transformer_lm: names, a position table of max_len, no state between segments") {
  auto model = build_lm(tiny_lm_config("transformer_lm"));
  const auto params = test::params_of(*model);
  CHECK(params.at("position.weight").shape() == Shape{32, 8});
  CHECK(params.at("embedding.weight").shape() == Shape{11, 8});
  CHECK(params.count("output.weight") == 0);  // tied to the embedding
  CHECK(params.count("norm.weight") == 0);    // post-LN: no final norm
  CHECK_FALSE(model->carries_state());
  model->eval();
  const Tensor first = random_tokens(2, 6, 11, 1), second = random_tokens(2, 7, 11, 2);
  const LmOutput out = model->forward(first, {});
  CHECK(out.state.empty());
  // A segment is read on its own: whatever came before, its logits are the same.
  CHECK(allclose(model->forward(second, out.state).logits.value(),
                 model->forward(second, {}).logits.value(), 0, 0));
}

TEST_CASE("transformer_lm: the same function as causal_lm with softmax and learned positions") {
  ModelConfig causal = tiny_lm_config("causal_lm");
  causal.positions = "learned";
  auto a = build_lm(tiny_lm_config("transformer_lm"), 9);
  auto b = build_lm(causal, 9);
  a->eval();
  b->eval();
  const Tensor tokens = random_tokens(3, 11, 11, 5);
  CHECK(
      allclose(a->forward(tokens, {}).logits.value(), b->forward(tokens, {}).logits.value(), 0, 0));
}

TEST_CASE("transformer_lm: f64 gradients of every parameter") {
  ModelConfig c = tiny_lm_config("transformer_lm");
  c.norm = "pre";  // and the final LayerNorm it brings
  auto model = build_lm(c, 4);
  CHECK(test::params_of(*model).count("norm.weight") == 1);
  const Tensor tokens = random_tokens(2, 5, 11, 6);
  test::check_parameter_gradients(*model, [&] { return model->forward(tokens, {}).logits; });
}

TEST_CASE("transformer_lm: configs it cannot run are refused, saying why") {
  const auto err = [](const ModelConfig& c) { return test::error_of([&] { build_lm(c); }); };
  ModelConfig none = tiny_lm_config("transformer_lm");
  none.positions = "none";
  CHECK(err(none).find("positions must be learned or sinusoidal, got 'none'") != std::string::npos);
  ModelConfig linear = tiny_lm_config("transformer_lm");
  linear.attention = test::options("model.attention", {{"type", "linear"}});
  CHECK(err(linear).find("use causal_lm for other attention") != std::string::npos);
  ModelConfig shaw = tiny_lm_config("transformer_lm");
  shaw.positional = test::options("model.positional", {{"type", "shaw"}});
  CHECK(err(shaw).find("transformer_lm has absolute positions only") != std::string::npos);
  ModelConfig memory = tiny_lm_config("transformer_lm");
  memory.own.set("mem_len", 4);
  CHECK(err(memory).find("[model] unknown option 'mem_len'; known: tie_weights") == 0);
  auto model = build_lm(tiny_lm_config("transformer_lm"));
  CHECK(test::error_of([&] {
          model->set_context({4, 0, false});
        }).find("positions 'learned' are absolute and cannot be continued") != std::string::npos);
  CHECK(test::error_of([&] {
          model->set_context({0, 8, false});
        }).find("transformer_lm has neither") != std::string::npos);
  CHECK(test::error_of([&] {
          model->forward(random_tokens(1, 33, 11, 1), {});
        }).find("a segment of 33 exceeds the 32 keys its position tables cover") !=
        std::string::npos);
}
