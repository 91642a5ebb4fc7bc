// Language models (transformer_xl, causal_lm): torch-style names and Transformer-XL's parameter
// count, segment memory against one pass over the concatenated segments (odd lengths, memory
// shorter and longer than a segment, every attention variant), mem_len 0, no gradient into the
// memory, causality, same_length and clamp_len, and the config errors.
#include <map>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/catalog.h"
#include "layers/attention/feature_map.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/linear_naive.h"
#include "tests/layers/lm_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;
using test::build_lm;
using test::columns;
using test::random_tokens;
using test::tiny_lm_config;
using Pairs = std::vector<std::pair<std::string, std::string>>;

namespace {

Tensor logits(LanguageModel& model, const Tensor& tokens, const LmState& state = {}) {
  return model.forward(tokens, state).logits.value();
}

std::map<std::string, Shape> shapes_of(const Module& m) {
  std::map<std::string, Shape> out;
  for (const auto& [name, p] : m.named_parameters()) out[name] = p.shape();
  return out;
}

}  // namespace

TEST_CASE("language models: transformer_xl names, shapes, shared u and v, and TXL's count") {
  ModelConfig c = tiny_lm_config("transformer_xl");
  auto txl = build_lm(c);
  const auto shapes = shapes_of(*txl);
  CHECK(shapes.at("r_w_bias") == Shape{2, 4});
  CHECK(shapes.at("r_r_bias") == Shape{2, 4});
  CHECK(shapes.at("embedding.weight") == Shape{11, 8});
  CHECK(shapes.at("layers.1.attn.q_proj.weight") == Shape{8, 8});
  CHECK(shapes.at("layers.1.attn.attention.r_net.weight") == Shape{8, 8});
  CHECK(shapes.at("layers.0.mlp.fc1.weight") == Shape{16, 8});
  CHECK(shapes.at("output.bias") == Shape{11});
  CHECK(shapes.count("layers.0.attn.attention.r_w_bias") == 0);  // tied to r_w_bias
  CHECK(shapes.count("output.weight") == 0);                     // tied to the embedding
  CHECK(shapes.count("norm.weight") == 0);                       // TXL has no final norm
  // MemTransformerLM's count: per layer qkv + o + r_net (no biases), FFN with biases, two
  // LayerNorms; plus embedding, shared u and v, and the output bias.
  const int64_t d = 8, inner = 16, V = 11, H = 2, Dh = 4;
  const int64_t per_layer =
      3 * d * H * Dh + H * Dh * d + d * H * Dh + (d * inner + inner) + (inner * d + d) + 4 * d;
  CHECK(txl->num_parameters() == 2 * per_layer + V * d + 2 * H * Dh + V);

  c.own.set("untie_r", true);
  c.own.set("tie_weights", false);
  const auto untied = shapes_of(*build_lm(c));
  CHECK(untied.count("r_w_bias") == 0);
  CHECK(untied.at("layers.1.attn.attention.r_r_bias") == Shape{2, 4});
  CHECK(untied.at("output.weight") == Shape{11, 8});
}

// Issue 30: the reference's dropout on the distance embedding, at the model's dropout rate.
TEST_CASE("language models: transformer_xl drops its distance embedding (model.dropout)") {
  ModelConfig c = tiny_lm_config("transformer_xl");
  auto undropped = build_lm(c);
  c.dropout = 0.1;
  auto dropped = build_lm(c);
  const auto names = [](const std::shared_ptr<LanguageModel>& m) {
    std::vector<std::string> out;
    for (const auto& [name, gen] : m->generator_slots()) out.push_back(name);
    return out;
  };
  const auto has = [&](const std::shared_ptr<LanguageModel>& m) {
    const auto n = names(m);
    return std::find(n.begin(), n.end(), "distance_dropout.generator") != n.end();
  };
  CHECK(has(dropped));  // checkpointed, so a resumed run draws the same masks
  CHECK_FALSE(has(undropped));
  // model.distance_dropout sets it apart from the other dropouts.
  ModelConfig own = c;
  own.own = c.own.with("distance_dropout", "0");
  CHECK_FALSE(has(build_lm(own)));
  own.dropout = 0;
  own.own = c.own.with("distance_dropout", "0.2");
  CHECK(has(build_lm(own)));
  own.own = c.own.with("distance_dropout", "1");
  CHECK(test::error_of([&] { build_lm(own); }) ==
        "[model] distance_dropout must be in [0, 1), got 1");
  // Built after every parameter: the initial weights are those of the undropped model.
  const auto a = undropped->named_parameters(), b = dropped->named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].first);
    CHECK(max(abs(sub(a[i].second.value(), b[i].second.value()))).item() == 0);
  }
}

TEST_CASE("language models: u and v are one tensor for all transformer_xl layers, trained once") {
  ModelConfig c = tiny_lm_config("transformer_xl");
  auto txl = build_lm(c);
  const Tensor tokens = random_tokens(2, 5, 11, 1);
  sum(txl->forward(tokens, {}).logits).backward();
  Var u;
  for (auto& [name, p] : txl->named_parameters())
    if (name == "r_w_bias") u = p;
  REQUIRE(u.defined());
  REQUIRE(u.grad().defined());
  CHECK(max(abs(u.grad())).item() > 0);
}

TEST_CASE(
    "language models: a segment after its memory equals one pass over [memory; segment], every "
    "variant, odd lengths, memory shorter and longer than a segment") {
  // One layer: the memory is the embedded previous segment, so segment 2 after segment 1 sees
  // exactly what one pass over [the last M tokens of segment 1; segment 2] sees.
  for (const test::LmVariant& v : test::lm_variants()) {
    for (int64_t mem_len : {3, 9}) {
      INFO(v.label << " mem_len " << mem_len);
      ModelConfig c = test::variant_config(v);
      c.num_layers = 1;
      c.own.set("mem_len", mem_len);
      auto model = build_lm(c, 3);
      model->eval();
      const int64_t l1 = 7, l2 = 5;
      const Tensor stream = random_tokens(2, l1 + l2, 11, 4);
      const LmOutput first = model->forward(columns(stream, 0, l1), {});
      REQUIRE(first.state.count("layers.0.memory") == 1);
      CHECK(first.state.at("layers.0.memory").size(1) == std::min(mem_len, l1));
      const Tensor got = logits(*model, columns(stream, l1, l1 + l2), first.state);
      const int64_t kept = std::min(mem_len, l1);
      const Tensor whole = logits(*model, columns(stream, l1 - kept, l1 + l2));
      // f64: the two differ in summation order only (FFT sizes, prefix sums).
      CHECK_CLOSE(got, whole.slice(1, kept, kept + l2), 1e-9, 1e-10);
    }
  }
}

TEST_CASE(
    "language models: with memory covering the stream, chunked segments equal one pass, two "
    "layers, three segments") {
  for (const test::LmVariant& v : test::lm_variants()) {
    INFO(v.label);
    ModelConfig c = test::variant_config(v);
    c.own.set("mem_len", 16);  // >= every earlier segment together
    auto model = build_lm(c, 5);
    model->eval();
    const int64_t lengths[] = {5, 3, 7};
    const Tensor stream = random_tokens(3, 15, 11, 6);
    const Tensor whole = logits(*model, stream);
    LmState state;
    int64_t at = 0;
    for (int64_t len : lengths) {
      const LmOutput out = model->forward(columns(stream, at, at + len), state);
      CHECK_CLOSE(out.logits.value(), whole.slice(1, at, at + len), 1e-9, 1e-10);
      state = out.state;
      at += len;
    }
  }
}

TEST_CASE(
    "language models: linear attention's running sums carried across segments equal one pass over "
    "the whole stream, every feature map, logits far from 0") {
  // recurrent_state: no window at all; three odd segments against one pass. Scaled inputs move
  // the exponential maps' key shift from segment to segment, so the carried sums are rescaled.
  for (const std::string& map : feature_map_names()) {
    for (double scale : {1.0, 40.0}) {
      INFO(map << " q, k projections times " << scale);
      ModelConfig c = tiny_lm_config("causal_lm");
      test::Kv attention = test::map_options(map, test::naive_feature_map_twin(map).cases.front());
      const AttentionCaps caps = test::make_linear(attention, 2, 4, DType::f64, 32)->caps();
      attention.insert(attention.begin(), {"type", "linear"});
      c.attention = test::options("model.attention", attention);
      c.own.set("recurrent_state", true);
      if (!caps.carries_state) {  // a position-dependent map: refused, saying so
        CHECK(test::error_of([&] {
                build_lm(c, 24);
              }).find("with a feature map that does not depend on positions") != std::string::npos);
        continue;
      }
      const int64_t features = caps.feature_dim;
      auto model = build_lm(c, 24);
      model->eval();
      for (auto& [name, p] : model->named_parameters())  // larger q and k: shifts far from 0
        if (name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos)
          p.set_value(mul_scalar(p.value(), scale));
      const Tensor stream = random_tokens(2, 17, 11, 25);
      const Tensor whole = logits(*model, stream);
      LmState state;
      int64_t at = 0;
      for (int64_t len : {5, 7, 5}) {
        const LmOutput out = model->forward(columns(stream, at, at + len), state);
        CHECK_CLOSE(out.logits.value(), whole.slice(1, at, at + len), 1e-9, 1e-10);
        state = out.state;
        at += len;
      }
      CHECK(state.count("layers.1.attention.sum") == 1);
      CHECK(state.at("layers.0.attention.sum").shape() == Shape{2, 2, features, 4});
    }
  }
  const auto err = [](ModelConfig c) { return test::error_of([&] { build_lm(c); }); };
  ModelConfig softmax = tiny_lm_config("causal_lm");
  softmax.own.set("recurrent_state", true);
  CHECK(err(softmax).find("recurrent_state carries linear attention's running sums") !=
        std::string::npos);
  ModelConfig both = tiny_lm_config("causal_lm");
  both.attention = test::options("model.attention", {{"type", "linear"}});
  both.own.set("recurrent_state", true);
  both.own.set("mem_len", 4);
  CHECK(err(both).find("mem_len must be 0") != std::string::npos);
}

TEST_CASE("language models: no position sees the future, every variant, with memory") {
  for (const test::LmVariant& v : test::lm_variants()) {
    INFO(v.label);
    ModelConfig c = test::variant_config(v);
    c.own.set("mem_len", 4);
    auto model = build_lm(c, 8);
    model->eval();
    const Tensor tokens = random_tokens(2, 9, 11, 9);
    const LmState memory = model->forward(random_tokens(2, 6, 11, 10), {}).state;
    const Tensor base = logits(*model, tokens, memory);
    for (int64_t t : {0, 4, 8}) {
      INFO("token " << t << " changed");
      Tensor changed = tokens.clone();
      changed.data<int64_t>()[t] = (changed.data<int64_t>()[t] + 5) % 11;
      const Tensor moved = logits(*model, changed, memory);
      // Exact but for rounding: sikf's and performer's key shift is one per (b, h) over all
      // keys, so a later key moves the rounding (not the value) of earlier outputs.
      if (t > 0) CHECK_CLOSE(moved.slice(1, 0, t), base.slice(1, 0, t), 1e-12, 1e-14);
      CHECK(max(abs(sub(moved.slice(1, t, 9), base.slice(1, t, 9)))).item() > 0);
    }
  }
}

TEST_CASE("language models: mem_len 0 keeps no state; a state then changes nothing") {
  ModelConfig c = tiny_lm_config("transformer_xl");
  auto with_memory = build_lm([&] {
    ModelConfig m = c;
    m.own.set("mem_len", 4);
    return m;
  }());
  const LmState memory = with_memory->forward(random_tokens(2, 5, 11, 11), {}).state;
  auto model = build_lm(c);
  const Tensor tokens = random_tokens(2, 6, 11, 12);
  const LmOutput out = model->forward(tokens, {});
  CHECK(out.state.empty());
  CHECK_CLOSE(logits(*model, tokens, memory), out.logits.value(), 0, 0);
}

TEST_CASE("language models: no gradient reaches the memory or the segment it came from") {
  // Untied output weights: embedding rows of tokens only in segment 1 get a gradient only
  // through the memory, which is detached.
  ModelConfig c = tiny_lm_config("causal_lm");
  c.positional = test::options("model.positional", {{"type", "shaw"}, {"window", "2"}});
  c.own.set("tie_weights", false);
  c.own.set("mem_len", 6);
  auto model = build_lm(c, 13);
  const Tensor first = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 1, 2, 3}, {1, 6});
  const Tensor second = Tensor::from_vector(std::vector<int64_t>{6, 7, 8, 9, 6}, {1, 5});
  const LmOutput out1 = model->forward(first, {});
  model->zero_grad();
  sum(model->forward(second, out1.state).logits).backward();
  Tensor grad;
  for (auto& [name, p] : model->named_parameters())
    if (name == "embedding.weight") grad = p.grad();
  REQUIRE(grad.defined());
  CHECK(max(abs(grad.slice(0, 1, 4))).item() == 0.0);  // rows 1, 2, 3: segment 1 only
  CHECK(max(abs(grad.slice(0, 6, 10))).item() > 0);
}

TEST_CASE("language models: same_length limits every query to mem_len keys; clamp_len by context") {
  ModelConfig c = tiny_lm_config("transformer_xl");
  c.num_layers = 1;
  c.own.set("mem_len", 3);
  c.own.set("same_length", true);
  auto model = build_lm(c, 14);
  model->eval();
  const Tensor tokens = random_tokens(1, 8, 11, 15);
  const Tensor base = logits(*model, tokens);
  // Query 6 sees keys 4, 5, 6: changing token 3 leaves it, changing token 4 does not.
  for (auto [t, visible] : {std::pair<int64_t, bool>{3, false}, {4, true}}) {
    Tensor changed = tokens.clone();
    changed.data<int64_t>()[t] = (changed.data<int64_t>()[t] + 3) % 11;
    const double moved =
        max(abs(sub(logits(*model, changed).slice(1, 6, 7), base.slice(1, 6, 7)))).item();
    CHECK((moved > 0) == visible);
  }
  // clamp_len set through the context equals a model built with it.
  c.own.set("same_length", false);
  c.own.set("mem_len", 0);
  auto clamped = build_lm(
      [&] {
        ModelConfig m = c;
        m.own.set("clamp_len", 2);
        return m;
      }(),
      16);
  auto later = build_lm(c, 16);
  later->set_context({0, 2, false});
  CHECK(later->context().clamp_len == 2);
  CHECK_CLOSE(logits(*later, tokens), logits(*clamped, tokens), 0, 0);
  CHECK(max(abs(sub(logits(*build_lm(c, 16), tokens), logits(*clamped, tokens)))).item() > 0);
}

TEST_CASE("language models: configs they cannot run are refused, saying why") {
  const auto err = [](ModelConfig c) { return test::error_of([&] { build_lm(c); }); };
  ModelConfig txl = tiny_lm_config("transformer_xl");
  txl.attention = test::options("model.attention", {{"type", "softmax"}});
  CHECK(err(txl).find("transformer_xl runs rel_xl attention") != std::string::npos);
  txl = tiny_lm_config("transformer_xl");
  txl.positional = test::options("model.positional", {{"type", "fastrpb"}});
  CHECK(err(txl).find("transformer_xl has its own relative positions") != std::string::npos);
  ModelConfig lm = tiny_lm_config("causal_lm");
  lm.positions = "learned";
  lm.own.set("mem_len", 4);
  CHECK(err(lm).find("positions 'learned' are absolute and cannot be continued across segments") !=
        std::string::npos);
  lm.own.set("mem_len", 0);
  CHECK(err(lm).empty());
  // transformer_xl's keys are not causal_lm's: refused by name; a wider evaluation context with
  // them is refused by set_context.
  lm.own.set("same_length", true);
  CHECK(err(lm).find("[model] unknown option 'same_length'") == 0);
  lm = tiny_lm_config("causal_lm");
  CHECK(test::error_of([&] {
          build_lm(lm)->set_context({0, 4, false});
        }).find("clamp_len and same_length are transformer_xl settings") != std::string::npos);
  ModelConfig txl_same = tiny_lm_config("transformer_xl");
  txl_same.own.set("same_length", true);
  CHECK(err(txl_same).find("same_length makes every query see mem_len keys") != std::string::npos);
  lm = tiny_lm_config("causal_lm");
  lm.attention = test::options("model.attention", {{"type", "rel_xl"}});
  CHECK(err(lm).find("use model.type transformer_xl") != std::string::npos);
  // A memory beyond what a learned table covers is refused at the forward that needs it.
  lm = tiny_lm_config("causal_lm");
  lm.positional = test::options("model.positional", {{"type", "fastrpb"}});
  lm.max_len = 8;
  lm.own.set("mem_len", 6);
  auto model = build_lm(lm);
  const LmState memory = model->forward(random_tokens(1, 6, 11, 1), {}).state;
  CHECK(test::error_of([&] {
          model->forward(random_tokens(1, 4, 11, 2), memory);
        }).find("memory 6 + segment 4 = 10 keys exceed the 8 its position tables cover") !=
        std::string::npos);
  // A segment alone longer than learned positions cover is named the same way (it was the
  // embedding's "sequence length 9 exceeds max_len 8", which names no key to change).
  lm = tiny_lm_config("causal_lm");
  lm.positions = "learned";
  lm.max_len = 8;
  CHECK(test::error_of([&] { build_lm(lm)->forward(random_tokens(1, 9, 11, 3), {}); }) ==
        "[model] causal_lm: a segment of 9 exceeds the 8 keys its position tables cover "
        "(model.max_len); train with a larger max_len or use a shorter tgt_len");
  // max_keys (what the task checks before training) is the shortest limit of the model's
  // tables, encodings and attention; cosFormer's re-weighting covers positions 0 .. M.
  CHECK(build_lm(lm)->max_keys() == 8);
  lm.positions = "none";
  CHECK(build_lm(lm)->max_keys() == 0);
  lm.attention =
      test::options("model.attention",
                    {{"type", "linear"}, {"feature_map", "cosformer"}, {"cosformer_len", "11"}});
  CHECK(build_lm(lm)->max_keys() == 12);
  lm.positional = test::options("model.positional", {{"type", "fastrpb"}});
  CHECK(build_lm(lm)->max_keys() == 8);
  // A causal_lm without positions is warned about, unless its attention uses positions itself
  // (cosFormer's re-weighting; the warning was false there).
  lm = tiny_lm_config("causal_lm");
  REQUIRE(build_lm(lm)->warnings().size() == 1);
  CHECK(build_lm(lm)->warnings()[0].find("causal_lm has no positions") != std::string::npos);
  lm.attention =
      test::options("model.attention", {{"type", "linear"}, {"feature_map", "cosformer"}});
  CHECK(build_lm(lm)->warnings().empty());
  // The task checks: a classifier is no language model and the other way round.
  Generator gen(0);
  CHECK(test::error_of([&] {
          make_classifier(tiny_lm_config("causal_lm"), gen);
        }).find("'causal_lm' is a language model") != std::string::npos);
}

TEST_CASE("language models: f64 parameter gradients match central differences") {
  for (const char* type : {"transformer_xl", "causal_lm"}) {
    INFO(type);
    ModelConfig c = tiny_lm_config(type);
    c.own.set("mem_len", 3);
    if (std::string(type) == "causal_lm")
      c.positional = test::options("model.positional", {{"type", "fastrpb"}});
    auto model = build_lm(c, 17);
    const LmState memory = model->forward(random_tokens(2, 4, 11, 18), {}).state;
    const Tensor tokens = random_tokens(2, 5, 11, 19);
    test::check_parameter_gradients(*model, [&] { return model->forward(tokens, memory).logits; });
  }
}

TEST_CASE("language models: CUDA matches CPU, forward with memory and gradients") {
  for (const char* type : {"transformer_xl", "causal_lm"}) {
    ModelConfig c = tiny_lm_config(type, DType::f32);
    c.own.set("mem_len", 3);
    auto model = build_lm(c, 21);
    model->eval();
    const Tensor first = random_tokens(2, 4, 11, 22), second = random_tokens(2, 5, 11, 23);
    test::check_cuda_matches_cpu(std::string("language model ") + type,
                                 [&](const std::vector<Tensor>& x) {
                                   model->to(x[0].device());
                                   const LmOutput a = model->forward(x[0], {});
                                   const LmOutput b = model->forward(x[1], a.state);
                                   return std::vector<Tensor>{a.logits.value(), b.logits.value(),
                                                              a.state.at("layers.1.memory")};
                                 },
                                 {first, second});
  }
}
