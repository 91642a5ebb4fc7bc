// model.index_first (ISDPA in models, seed 001): the first block's attention computed from the
// token ids equals the standard first block in f64, logits and every parameter's gradient, for
// the classifiers (CLS vector or [CLS] token, learned or sinusoidal positions, padding, tied
// blocks, stacked heads) and the causal LM; every configuration where it would not be exact is
// refused, saying why.
#include <string>

#include "autograd/functions.h"
#include "tests/harness.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/lm_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;

namespace {

// Post-LN without an embedding LayerNorm (Vaswani et al.): where index_first is exact.
ModelConfig vaswani_config() {
  ModelConfig c = test::tiny_model_config(DType::f64);
  c.norm = "post";
  c.own.set("embedding_norm", false);
  c.projection_bias = true;  // the bias goes with the token's row, once
  return c;
}

// Logits and every parameter's gradient (of sum(logits * r)) of `model`.
std::pair<Tensor, std::map<std::string, Tensor>> outputs(Module& model, const Var& logits) {
  const Tensor r = test::random_tensor(logits.shape(), DType::f64, 5);
  model.zero_grad();
  logits.backward(r);
  std::map<std::string, Tensor> grads;
  for (const auto& [name, p] : model.named_parameters())
    grads[name] = p.grad().defined() ? p.grad().clone() : zeros_like(p.value());
  return {logits.value(), grads};
}

void check_same(const std::pair<Tensor, std::map<std::string, Tensor>>& got,
                const std::pair<Tensor, std::map<std::string, Tensor>>& want) {
  CHECK_CLOSE(got.first, want.first, 1e-10, 1e-12);
  REQUIRE(got.second.size() == want.second.size());
  for (const auto& [name, g] : want.second) {
    RELPOS_INFO("{}", name);
    CHECK_CLOSE(got.second.at(name), g, 1e-9, 1e-11);
  }
}

}  // namespace

TEST_CASE("index first: a classifier's first block equals the standard one (f64, gradients too)") {
  struct Case {
    std::string cls, positions, combiner;
    bool tied;
  };
  for (const Case& k :
       {Case{"vector", "learned", "concat", false}, Case{"token", "learned", "concat", false},
        Case{"vector", "sinusoidal", "stacked", false}, Case{"none", "none", "concat", true}}) {
    RELPOS_INFO("cls {} positions {} {} tied {}", k.cls, k.positions, k.combiner, k.tied);
    ModelConfig c = vaswani_config();
    c.own.set("cls", k.cls);
    c.own.set("pooling", k.cls == "none" ? "mean" : "cls");
    c.positions = k.positions;
    c.head_combiner = k.combiner;
    c.own.set("tied_blocks", k.tied);
    ModelConfig fast = c;
    fast.index_first = true;
    auto standard = test::build_model(c, 3), indexed = test::build_model(fast, 3);
    const auto batch =
        test::batch_of(test::kRows, k.cls == "token" ? 7 : 5, standard->special_tokens());
    const ClassifierInputs in{batch.first, batch.second, {}, {}};
    check_same(outputs(*indexed, indexed->forward(in)), outputs(*standard, standard->forward(in)));
  }
}

TEST_CASE("index first: a causal LM with absolute positions equals the standard one (f64)") {
  for (const char* positions : {"learned", "sinusoidal"}) {
    INFO(positions);
    ModelConfig c = test::tiny_lm_config("causal_lm");
    c.positions = positions;
    ModelConfig fast = c;
    fast.index_first = true;
    auto standard = test::build_lm(c, 4), indexed = test::build_lm(fast, 4);
    const Tensor tokens = test::random_tokens(3, 9, c.vocab_size, 6);
    check_same(outputs(*indexed, indexed->forward(tokens, {}).logits),
               outputs(*standard, standard->forward(tokens, {}).logits));
  }
}

TEST_CASE("index first: with dropout it trains; in evaluation it equals the standard model") {
  ModelConfig c = vaswani_config();
  c.dropout = 0.3;
  ModelConfig fast = c;
  fast.index_first = true;
  auto standard = test::build_model(c, 8), indexed = test::build_model(fast, 8);
  const auto batch = test::batch_of(test::kRows, 5);
  const ClassifierInputs in{batch.first, batch.second, {}, {}};
  const Var trained = indexed->forward(in);  // training mode: dropout on the residual path
  sum(trained * trained).backward();
  CHECK(all_finite(trained.value()));
  standard->eval();
  indexed->eval();
  CHECK_CLOSE(indexed->forward(in).value(), standard->forward(in).value(), 1e-10, 1e-12);
}

TEST_CASE("index first: refused wherever it would not be exact, saying why") {
  const auto err = [](ModelConfig c) {
    c.index_first = true;
    return test::error_of([&] { test::build_model(c); });
  };
  const std::string head =
      "[model] index_first computes the first attention from the token ids, "
      "exact only where it reads embedding + position directly: ";
  ModelConfig pre = vaswani_config();
  pre.norm = "pre";
  CHECK(err(pre) == head + "norm 'pre' normalizes the block's input first (use post)");
  ModelConfig bert = vaswani_config();
  bert.own.set("embedding_norm", true);
  CHECK(err(bert) == head +
                         "embedding_norm: true puts a LayerNorm on the embeddings (set it "
                         "false)");
  ModelConfig pixels = vaswani_config();
  pixels.own.set("input", "pixels");
  pixels.vocab_size = 256;
  CHECK(err(pixels) == head + "input 'pixels' goes through a projection, not a lookup");
  ModelConfig linear = vaswani_config();
  linear.attention = test::options("model.attention", {{"type", "linear"}});
  CHECK(err(linear) == head + "it computes softmax attention, got attention 'linear'");
  ModelConfig shaw = vaswani_config();
  shaw.positional = test::options("model.positional", {{"type", "shaw"}});
  CHECK(err(shaw) ==
        head + "a relative encoding (positional: shaw) is not part of the four-term scores");
  ModelConfig dropatt = vaswani_config();
  dropatt.attention_dropout = 0.1;
  CHECK(err(dropatt) ==
        head + "it has no dropout on the attention weights: set attention_dropout: 0");
  ModelConfig memory = test::tiny_lm_config("causal_lm");
  memory.own.set("mem_len", 4);
  memory.index_first = true;
  CHECK(test::error_of([&] { test::build_lm(memory); }) ==
        head + "a memory holds hidden states, not token ids: set mem_len: 0");
  ModelConfig txl = test::tiny_lm_config("transformer_xl");
  txl.index_first = true;
  CHECK(test::error_of([&] { test::build_lm(txl); }) ==
        head + "it computes softmax attention, got attention 'rel_xl'");
}
