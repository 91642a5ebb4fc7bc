// Models (layers/models/): torch names and shapes, tied blocks, padding invariance across
// attention variants and CLS styles, pre/post norm, pixel input, the dual encoder,
// dropout in train vs eval, f64 gradients by finite differences, and the naive twin: a 1-layer
// LRA model against its forward composed by hand from the same parameters.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "layers/models/model.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;

using Pairs = std::vector<std::pair<std::string, std::string>>;
using test::batch_of;
using test::build_model;
using test::kRows;
using test::logits_of;
using test::params_of;
using test::tiny_model_config;

TEST_CASE("models: a tiny LRA classifier has torch names and shapes") {
  ModelConfig c = tiny_model_config();
  c.num_layers = 1;
  c.qkv_dim = 4;  // differs from model_dim, so [out, in] is visible
  auto model = build_model(c);
  std::vector<std::string> names;
  for (const auto& [name, p] : model->named_parameters()) names.push_back(name);
  const std::vector<std::string> want = {"encoder.cls",
                                         "encoder.embedding.weight",
                                         "encoder.position.weight",
                                         "encoder.layers.0.ln1.weight",
                                         "encoder.layers.0.ln1.bias",
                                         "encoder.layers.0.attn.q_proj.weight",
                                         "encoder.layers.0.attn.k_proj.weight",
                                         "encoder.layers.0.attn.v_proj.weight",
                                         "encoder.layers.0.attn.out_proj.weight",
                                         "encoder.layers.0.ln2.weight",
                                         "encoder.layers.0.ln2.bias",
                                         "encoder.layers.0.mlp.fc1.weight",
                                         "encoder.layers.0.mlp.fc1.bias",
                                         "encoder.layers.0.mlp.fc2.weight",
                                         "encoder.layers.0.mlp.fc2.bias",
                                         "encoder.norm.weight",
                                         "encoder.norm.bias",
                                         "head.fc1.weight",
                                         "head.fc1.bias",
                                         "head.fc2.weight",
                                         "head.fc2.bias"};
  CHECK(names == want);
  auto p = params_of(*model);
  CHECK(p["encoder.cls"].shape() == Shape{8});
  CHECK(p["encoder.embedding.weight"].shape() == Shape{11, 8});              // no special ids
  CHECK(p["encoder.position.weight"].shape() == Shape{9, 8});                // max_len + CLS
  CHECK(p["encoder.layers.0.attn.q_proj.weight"].shape() == Shape{4, 8});    // [qkv, model]
  CHECK(p["encoder.layers.0.attn.out_proj.weight"].shape() == Shape{8, 4});  // [model, qkv]
  CHECK(p["encoder.layers.0.mlp.fc1.weight"].shape() == Shape{16, 8});
  CHECK(p["head.fc1.weight"].shape() == Shape{16, 8});
  CHECK(p["head.fc2.weight"].shape() == Shape{3, 16});
  // The CLS vector starts at zero (LRA); the outputs are [B, classes].
  CHECK(sum(abs(p["encoder.cls"].value())).item() == 0.0);
  CHECK(logits_of(*model, batch_of(kRows, 6)).shape() == Shape{2, 3});
  CHECK(model->special_tokens().cls_id == -1);
  CHECK(model->special_tokens().sep_id == -1);

  // BERT style: [CLS]/[SEP] ids, projection biases, the pooler head, post-LN.
  c.own.set("cls", "token");
  c.own.set("head", "tanh");
  c.norm = "post";
  c.projection_bias = true;
  auto bert = build_model(c);
  auto q = params_of(*bert);
  CHECK(q["encoder.embedding.weight"].shape() == Shape{13, 8});  // vocab + [CLS] + [SEP]
  CHECK(q["encoder.position.weight"].shape() == Shape{10, 8});   // max_len + 2
  CHECK(q["encoder.embedding_norm.weight"].shape() == Shape{8});
  CHECK(q["encoder.layers.0.attn.q_proj.bias"].shape() == Shape{4});
  CHECK(q["pooler.weight"].shape() == Shape{8, 8});
  CHECK(q["classifier.weight"].shape() == Shape{3, 8});
  CHECK(q.count("encoder.cls") == 0);
  CHECK(q.count("encoder.norm.weight") == 0);
  CHECK(bert->special_tokens().cls_id == 11);
  CHECK(bert->special_tokens().sep_id == 12);
}

TEST_CASE("models: tied blocks hold one block's parameters and apply it num_layers times") {
  ModelConfig one = tiny_model_config();
  one.num_layers = 1;
  ModelConfig tied = tiny_model_config();
  tied.num_layers = 3;
  tied.own.set("tied_blocks", true);
  auto a = build_model(one, 5);
  auto b = build_model(tied, 5);  // the same draws: one block either way
  std::vector<std::string> na, nb;
  for (const auto& [name, p] : a->named_parameters()) na.push_back(name);
  for (const auto& [name, p] : b->named_parameters()) nb.push_back(name);
  CHECK(na == nb);
  CHECK(a->num_parameters() == b->num_parameters());
  auto pa = params_of(*a), pb = params_of(*b);
  for (const auto& [name, p] : pa) CHECK(allclose(p.value(), pb[name].value(), 0, 0));
  a->eval();
  b->eval();
  const auto batch = batch_of(kRows, 5);
  const Tensor ya = logits_of(*a, batch), yb = logits_of(*b, batch);
  CHECK(max(abs(sub(ya, yb))).item() > 1e-4);  // three applications, not one
}

TEST_CASE("models: appended padding leaves the logits unchanged, per variant and CLS style") {
  struct Case {
    const char* name;
    Pairs attention, positional;
    std::string cls, pooling;
  };
  const std::vector<Case> cases = {
      {"softmax, cls vector", {{"type", "softmax"}}, {}, "vector", "cls"},
      {"softmax, cls token", {{"type", "softmax"}}, {}, "token", "cls"},
      {"softmax, mean pooling", {{"type", "softmax"}}, {}, "none", "mean"},
      {"linear elu1, cls vector",
       {{"type", "linear"}, {"feature_map", "elu1"}},
       {},
       "vector",
       "cls"},
      {"linear elu1, cls token", {{"type", "linear"}, {"feature_map", "elu1"}}, {}, "token", "cls"},
      {"linear sikf + fastrpb, cls vector",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "fastrpb"}},
       "vector",
       "cls"},
      // [CLS] ... [SEP] then padding: the SEP row is not content for FastRPB wherever it sits.
      {"linear sikf + fastrpb, cls token",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "fastrpb"}},
       "token",
       "cls"},
      {"softmax + fastrpb, cls token",
       {{"type", "softmax"}},
       {{"type", "fastrpb"}},
       "token",
       "cls"},
      {"linear sikf + fastrpb, no cls, mean pooling",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "fastrpb"}},
       "none",
       "mean"},
  };
  for (const Case& k : cases) {
    INFO(k.name);
    ModelConfig c = tiny_model_config();
    c.attention = test::options("model.attention", k.attention);
    c.positional = test::options("model.positional", k.positional);
    c.own.set("cls", k.cls);
    c.own.set("pooling", k.pooling);
    auto model = build_model(c, 3);
    model->eval();
    // Make the FastRPB weights large enough to matter (their init is ~1e-5).
    for (auto& [name, p] : model->named_parameters())
      if (name.find("positional") != std::string::npos)
        p.set_value(test::random_tensor(p.shape(), p.dtype(), 4, -0.5, 0.5));
    const SpecialTokens special = model->special_tokens();
    const int64_t framing = k.cls == "token" ? 2 : 0;
    const Tensor short_pad = logits_of(*model, batch_of(kRows, 5 + framing, special));
    const Tensor long_pad = logits_of(*model, batch_of(kRows, 8 + framing, special));
    // f32 through two blocks; padding changes only the summation lengths over zeros.
    CHECK_CLOSE(long_pad, short_pad, 1e-5, 1e-5);
    // Row 1 alone, unpadded, gives its row of the padded batch.
    const Tensor alone = logits_of(*model, batch_of({kRows[1]}, 3 + framing, special));
    CHECK_CLOSE(alone, long_pad.slice(0, 1, 2), 1e-5, 1e-5);
  }
}

TEST_CASE(
    "models: an eval prediction depends on the example only (sinspe, convspe 1-D and 2-D): batch "
    "1, batch N and a shuffled batch agree") {
  struct Case {
    const char* name;
    Pairs attention, positional;
    std::vector<std::string> grid;  // 2-D: pixel input on this grid, no CLS, mean pooling
  };
  const std::vector<Case> cases = {
      {"softmax + sinspe",
       {{"type", "softmax"}},
       {{"type", "sinspe"}, {"num_realizations", "6"}, {"num_sines", "3"}},
       {}},
      {"softmax + convspe",
       {{"type", "softmax"}},
       {{"type", "convspe"}, {"num_realizations", "6"}, {"kernel_size", "3"}},
       {}},
      {"linear elu1 + convspe",
       {{"type", "linear"}, {"feature_map", "elu1"}},
       {{"type", "convspe"}, {"num_realizations", "6"}, {"kernel_size", "4"}},
       {}},
      {"softmax + convspe 2-D",
       {{"type", "softmax"}},
       {{"type", "convspe"}, {"num_realizations", "6"}, {"kernel_size", "2"}},
       {"2", "3"}},
  };
  // Rows of lengths 5, 3 and 7 (1-D), or three full 2 x 3 images (2-D).
  for (const Case& k : cases) {
    INFO(k.name);
    ModelConfig c = tiny_model_config();
    c.attention = test::options("model.attention", k.attention);
    c.positional = test::options("model.positional", k.positional);
    std::vector<std::vector<int64_t>> rows = {{3, 1, 4, 1, 5}, {9, 2, 6}, {5, 3, 5, 8, 9, 7, 9}};
    if (!k.grid.empty()) {
      c.positional.set_list("grid", k.grid);
      c.own.set("input", "pixels");
      c.vocab_size = 256;
      c.max_len = 6;
      c.own.set("cls", "none");
      c.own.set("pooling", "mean");
      c.positions = "none";
      rows = {{0, 255, 128, 7, 9, 200}, {255, 255, 0, 1, 17, 3}, {40, 80, 120, 160, 200, 240}};
    }
    auto model = build_model(c, 5);
    model->eval();
    const int64_t longest = k.grid.empty() ? 8 : 6;  // padded to the model's max_len
    const Tensor together = logits_of(*model, batch_of(rows, longest));
    const Tensor shuffled = logits_of(*model, batch_of({rows[2], rows[0], rows[1]}, longest));
    for (int64_t i = 0; i < 3; ++i) {
      INFO("row " << i);
      const auto len = static_cast<int64_t>(rows[i].size());
      const Tensor alone = logits_of(*model, batch_of({rows[i]}, len));
      // f32 through two blocks; the rows differ only in summation lengths over zeros.
      CHECK_CLOSE(alone, together.slice(0, i, i + 1), 1e-5, 1e-5);
      const int64_t at = (i + 1) % 3;  // row i sits at (i + 1) mod 3 of the shuffled batch
      CHECK_CLOSE(shuffled.slice(0, at, at + 1), together.slice(0, i, i + 1), 1e-5, 1e-5);
    }
  }
}

TEST_CASE(
    "models: FastRPB in the last block cannot reach CLS-pooled logits; it is reported, and with "
    "two blocks the first block's weights learn") {
  ModelConfig c = tiny_model_config(DType::f64);
  c.attention = test::options("model.attention", {{"type", "linear"}, {"feature_map", "sikf"}});
  c.positional = test::options("model.positional", {{"type", "fastrpb"}});
  const auto batch = batch_of(kRows, 6);
  const auto set_positional = [](Classifier& model, double value) {
    for (auto& [name, p] : model.named_parameters())
      if (name.find("positional") != std::string::npos)
        p.set_value(full(p.shape(), value, p.dtype()));
  };

  c.num_layers = 1;
  auto one = build_model(c);
  REQUIRE(one->warnings().size() == 1);
  const std::string warning = one->warnings()[0];
  CHECK(warning.find("[model] encoder.layers.0.attn.positional (fastrpb) cannot reach the "
                     "output") == 0);
  CHECK(warning.find("the same function as without it") != std::string::npos);
  // It is so: the weights (made large) change nothing, bit for bit.
  set_positional(*one, 0.3);
  const Tensor with_term = logits_of(*one, batch);
  set_positional(*one, 0.0);
  CHECK(max(abs(sub(with_term, logits_of(*one, batch)))).item() == 0.0);

  c.num_layers = 2;
  auto two = build_model(c);
  REQUIRE(two->warnings().size() == 1);
  CHECK(two->warnings()[0].find("encoder.layers.1.attn.positional") != std::string::npos);
  CHECK(two->warnings()[0].find("get no gradient") != std::string::npos);
  sum(two->forward({batch.first, batch.second, {}, {}})).backward();
  auto p = params_of(*two);
  const Tensor first = p["encoder.layers.0.attn.positional.weight"].grad();
  REQUIRE(first.defined());
  CHECK(max(abs(first)).item() > 0);
  const Tensor last = p["encoder.layers.1.attn.positional.weight"].grad();
  CHECK((!last.defined() || max(abs(last)).item() == 0.0));

  // Nothing to report where the term reaches the output: mean pooling, tied blocks (the one
  // block runs first too), the encoding on the CLS row (special_tokens_front: 0), no FastRPB.
  c.num_layers = 1;
  c.own.set("cls", "none");
  c.own.set("pooling", "mean");
  CHECK(build_model(c)->warnings().empty());
  c.own.set("cls", "vector");
  c.own.set("pooling", "cls");
  c.num_layers = 2;
  c.own.set("tied_blocks", true);
  CHECK(build_model(c)->warnings().empty());
  c.own.set("tied_blocks", false);
  c.positional =
      test::options("model.positional", {{"type", "fastrpb"}, {"special_tokens_front", "0"}});
  CHECK(build_model(c)->warnings().empty());
  c.positional = test::options("model.positional", {{"type", "shaw"}, {"window", "2"}});
  CHECK(build_model(c)->warnings().empty());
  // The dual encoder pools CLS rows of the same encoder.
  c.type = "dual_encoder";
  c.positional = test::options("model.positional", {{"type", "fastrpb"}});
  CHECK(build_model(c)->warnings().size() == 1);
}

TEST_CASE("models: pre-LN and post-LN both run and differ; absolute positions; pixel input") {
  ModelConfig c = tiny_model_config();
  auto pre = build_model(c);
  c.norm = "post";
  auto post = build_model(c);
  const auto batch = batch_of(kRows, 5);
  const Tensor a = logits_of(*pre, batch), b = logits_of(*post, batch);
  CHECK(a.shape() == Shape{2, 3});
  CHECK(all_finite(b));
  CHECK(max(abs(sub(a, b))).item() > 1e-4);
  // Sinusoidal positions are a buffer [max_len + CLS, d], not a parameter; "none" has neither.
  c.positions = "sinusoidal";
  auto sinusoidal = build_model(c);
  CHECK(params_of(*sinusoidal).count("encoder.position.weight") == 0);
  REQUIRE(sinusoidal->named_buffers().size() == 1);
  CHECK(sinusoidal->named_buffers()[0].first == "encoder.position.pe");
  CHECK(sinusoidal->named_buffers()[0].second.shape() == Shape{9, 8});
  CHECK(all_finite(logits_of(*sinusoidal, batch)));
  c.positions = "none";
  CHECK(build_model(c)->named_buffers().empty());

  // MNIST style: 8-bit pixels as ids, [CLS] 256 and [SEP] 257 from a small "special" table.
  ModelConfig m = tiny_model_config();
  m.own.set("input", "pixels");
  m.vocab_size = 256;
  m.own.set("cls", "token");
  m.own.set("head", "tanh");
  m.norm = "post";
  m.positions = "learned";
  auto model = build_model(m);
  auto p = params_of(*model);
  CHECK(p["encoder.pixel_proj.weight"].shape() == Shape{8, 1});
  CHECK(p["encoder.special.weight"].shape() == Shape{2, 8});
  CHECK(p.count("encoder.embedding.weight") == 0);
  CHECK(model->special_tokens().cls_id == 256);
  const auto pixels = batch_of({{0, 255, 128, 7}, {255, 255, 0, 1}}, 6, model->special_tokens());
  const Var y = model->forward({pixels.first, pixels.second, {}, {}});
  CHECK(y.shape() == Shape{2, 3});
  sum(y).backward();
  // Gradients reach both the projection and the [CLS]/[SEP] rows.
  CHECK(sum(abs(p["encoder.pixel_proj.weight"].grad())).item() > 0);
  CHECK(sum(abs(p["encoder.special.weight"].grad())).item() > 0);
  // A pixel's value matters (value / 255 through the projection).
  const auto brighter = batch_of({{0, 255, 128, 8}, {255, 255, 0, 1}}, 6, model->special_tokens());
  model->eval();
  CHECK(max(abs(sub(logits_of(*model, pixels), logits_of(*model, brighter)))).item() > 0);
}

TEST_CASE("models: dual encoder, concat and features, one shared encoder") {
  for (const char* combine : {"concat", "features"}) {
    INFO(combine);
    ModelConfig c = tiny_model_config();
    c.type = "dual_encoder";
    c.own.set("num_classes", 2);
    c.own.set("combine", combine);
    auto model = build_model(c);
    auto p = params_of(*model);
    const int64_t in = std::string(combine) == "concat" ? 16 : 32;
    CHECK(p["head.fc1.weight"].shape() == Shape{16, in});
    CHECK(p["head.fc2.weight"].shape() == Shape{8, 16});  // mlp_dim / 2
    CHECK(p["head.fc3.weight"].shape() == Shape{2, 8});
    CHECK(p.count("encoder.layers.0.attn.q_proj.weight") == 1);
    for (const auto& [name, v] : p)  // one encoder for both documents, then the head
      CHECK((name.rfind("encoder.", 0) == 0 || name.rfind("head.", 0) == 0));
    model->eval();
    const auto one = batch_of(kRows, 5);
    const auto two = batch_of({{1, 2}, {7, 7, 7, 7, 7}}, 5);
    const Tensor y = model->forward({one.first, one.second, two.first, two.second}).value();
    CHECK(y.shape() == Shape{2, 2});
    // Swapping the documents is another input (the head is not symmetric in u, v).
    const Tensor swapped = model->forward({two.first, two.second, one.first, one.second}).value();
    CHECK(max(abs(sub(y, swapped))).item() > 1e-6);
    CHECK(test::error_of([&] {
            model->forward({one.first, one.second, {}, {}});
          }) == "[model] dual_encoder needs tokens and tokens2 (the two documents)");
  }
}

TEST_CASE("models: a shared positional encoding is one module under every layer") {
  ModelConfig c = tiny_model_config();
  c.positional = test::options("model.positional", {{"type", "fastrpb"}});
  auto separate = params_of(*build_model(c));
  CHECK(separate.count("encoder.layers.0.attn.positional.weight") == 1);
  CHECK(separate.count("encoder.layers.1.attn.positional.weight") == 1);
  c.own.set("share_positional", true);
  auto shared = params_of(*build_model(c));
  CHECK(shared.count("encoder.layers.0.attn.positional.weight") == 1);
  CHECK(shared.count("encoder.layers.1.attn.positional.weight") == 0);  // listed once
  CHECK(shared.size() + 1 == separate.size());
}

TEST_CASE("models: eval is deterministic; train mode with dropout differs between calls") {
  ModelConfig c = tiny_model_config();
  c.dropout = 0.1;
  c.attention_dropout = 0.1;
  auto model = build_model(c);
  const auto batch = batch_of(kRows, 5);
  model->eval();
  CHECK(allclose(logits_of(*model, batch), logits_of(*model, batch), 0, 0));
  model->train();
  CHECK_FALSE(allclose(logits_of(*model, batch), logits_of(*model, batch), 0, 0));
  // Attention dropout alone reaches the softmax layers (its mapping had no `dropout`).
  c.dropout = 0;
  c.attention_dropout = 0.5;
  auto attn_only = build_model(c);
  CHECK_FALSE(allclose(logits_of(*attn_only, batch), logits_of(*attn_only, batch), 0, 0));
  attn_only->eval();
  CHECK(allclose(logits_of(*attn_only, batch), logits_of(*attn_only, batch), 0, 0));
}
