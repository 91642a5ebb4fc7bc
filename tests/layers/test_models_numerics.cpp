// Models, numerically: f64 parameter gradients against central differences, and the naive twin
// (a 1-layer LRA model against its forward composed by hand from the same parameters).
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
using test::batch_of;
using test::build_model;
using test::dense;
using test::kRows;
using test::logits_of;
using test::naive_layer_norm;
using test::params_of;
using test::tiny_model_config;

namespace {

void check_parameter_gradients(Classifier& model, const std::pair<Tensor, Tensor>& batch) {
  test::check_parameter_gradients(model, [&] {
    return model.forward({batch.first, batch.second, {}, {}});
  });
}

}  // namespace

TEST_CASE("models: f64 parameter gradients match central differences") {
  // Every parameter of a tiny model with softmax + FastRPB, padding, both CLS styles, the heads
  // concatenated or stacked (seed 001).
  for (const auto& [cls, combiner] : std::vector<std::pair<std::string, std::string>>{
           {"vector", "concat"}, {"token", "concat"}, {"vector", "stacked"}}) {
    RELPOS_INFO("{} {}", cls, combiner);
    ModelConfig c = tiny_model_config(DType::f64);
    c.own.set("cls", cls);
    c.head_combiner = combiner;
    c.positional = test::options("model.positional", {{"type", "fastrpb"}});
    auto model = build_model(c, 11);
    check_parameter_gradients(*model,
                              batch_of(kRows, cls == "token" ? 7 : 5, model->special_tokens()));
  }
}

TEST_CASE("models: f64 parameter gradients of an image model (patches, learned2d, FastRPB 2D)") {
  // A 6 x 6 image in 3 x 3 patches every 2 pixels: a 3 x 3 grid of tokens after the CLS vector.
  ModelConfig c = tiny_model_config(DType::f64);
  c.own.set("input", "patches");
  c.vocab_size = 256;
  c.max_len = 36;
  c.positions = "learned2d";
  c.own.set_list("position_grid", {"3", "3"});
  c.positional = test::options("model.positional", {{"type", "fastrpb2d"}});
  c.positional.set_list("grid", {"3", "3"});
  auto model = build_model(c, 13);
  std::vector<std::vector<int64_t>> images(2);
  for (int64_t i = 0; i < 36; ++i) {
    images[0].push_back((i * 37) % 256);
    images[1].push_back((i * 91 + 5) % 256);
  }
  check_parameter_gradients(*model, batch_of(images, 36));
}

TEST_CASE("models: a 1-layer LRA model equals its forward composed by hand (naive twin)") {
  // embedding + CLS vector + learned positions + pre-LN block (softmax by explicit loops; heads
  // concatenated through out_proj, or stacked as seed 001) + final LayerNorm + CLS row + MLP head,
  // from the model's own parameters; f64 to 1e-10 (the two differ only in summation order).
  for (const std::string combiner : {"concat", "stacked"}) {
    INFO(combiner);
    ModelConfig c = tiny_model_config(DType::f64);
    c.num_layers = 1;
    c.qkv_dim = 4;
    c.head_combiner = combiner;
    if (combiner == "stacked") c.stacked_hidden = 3;
    auto model = build_model(c, 21);
    auto p = params_of(*model);
    // Non-trivial values where init leaves zeros or ones.
    for (const char* name : {"encoder.cls", "encoder.layers.0.ln1.weight",
                             "encoder.layers.0.ln2.bias", "encoder.norm.bias"})
      p[name].set_value(test::random_tensor(p[name].shape(), DType::f64, 22, -1, 1));
    const auto batch = batch_of(kRows, 5);
    const Tensor got = logits_of(*model, batch);

    const int64_t B = 2, L = 6, d = 8, H = 2, Dh = 2;
    // x: [B, 1 + 5, d] = [cls, E[tokens]] + P[:6]
    const Tensor cls = p["encoder.cls"].value().reshape({1, 1, d}).expand({B, 1, d});
    Tensor x = cat({cls, embedding(p["encoder.embedding.weight"].value(), batch.first)}, 1);
    x = add(x, p["encoder.position.weight"].value().slice(0, 0, L));
    const Tensor mask = cat({ones({B, 1}, DType::u8), batch.second}, 1);  // [B, L]
    const std::string blk = "encoder.layers.0.";
    const auto flat = [&](const Tensor& t) { return t.reshape({B * L, t.size(-1)}); };
    const auto heads = [&](const Tensor& t) {  // [B*L, H*Dh] -> [B, H, L, Dh]
      return t.reshape({B, L, H, Dh}).permute({0, 2, 1, 3}).contiguous();
    };
    const Tensor h = flat(naive_layer_norm(x, p[blk + "ln1.weight"], p[blk + "ln1.bias"]));
    const Tensor q = heads(dense(h, p[blk + "attn.q_proj.weight"], {}));
    const Tensor k = heads(dense(h, p[blk + "attn.k_proj.weight"], {}));
    const Tensor v = heads(dense(h, p[blk + "attn.v_proj.weight"], {}));
    AttentionInputs in;
    in.key_mask = mask;
    const Tensor att = test::naive_softmax_from_scores(test::naive_scores(q, k), v, in, Dh);
    Tensor combined;  // [B * L, d]
    if (combiner == "concat") {
      const Tensor merged = att.permute({0, 2, 1, 3}).contiguous().reshape({B * L, H * Dh});
      combined = dense(merged, p[blk + "attn.out_proj.weight"], {});
    } else {
      // out[b, l, e * O + o] = tanh(sum_n W_O[o, n] tanh(sum_h W_H[n, h] head_h[b, l, e])), O = d /
      // Dh
      const int64_t O = d / Dh, N = 3;
      const auto a = att.to_vector<double>();
      const auto wh = p[blk + "attn.combiner.w_h.weight"].value().to_vector<double>();  // [N, H]
      const auto wo = p[blk + "attn.combiner.w_o.weight"].value().to_vector<double>();  // [O, N]
      std::vector<double> out(B * L * d);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t e = 0; e < Dh; ++e)
            for (int64_t o = 0; o < O; ++o) {
              double s = 0;
              for (int64_t n = 0; n < N; ++n) {
                double t = 0;
                for (int64_t hh = 0; hh < H; ++hh)
                  t += wh[n * H + hh] * a[((b * H + hh) * L + l) * Dh + e];
                s += wo[o * N + n] * std::tanh(t);
              }
              out[(b * L + l) * d + e * O + o] = std::tanh(s);
            }
      combined = Tensor::from_vector(out, {B * L, d});
    }
    x = add(x, combined.reshape({B, L, d}));
    const Tensor h2 = flat(naive_layer_norm(x, p[blk + "ln2.weight"], p[blk + "ln2.bias"]));
    const Tensor mlp = dense(gelu(dense(h2, p[blk + "mlp.fc1.weight"], p[blk + "mlp.fc1.bias"])),
                             p[blk + "mlp.fc2.weight"], p[blk + "mlp.fc2.bias"]);
    x = add(x, mlp.reshape({B, L, d}));
    x = naive_layer_norm(x, p["encoder.norm.weight"], p["encoder.norm.bias"]);
    const Tensor pooled = x.select(1, 0).contiguous();  // [B, d]
    const Tensor want = dense(relu(dense(pooled, p["head.fc1.weight"], p["head.fc1.bias"])),
                              p["head.fc2.weight"], p["head.fc2.bias"]);
    CHECK_CLOSE(got, want, 1e-10, 1e-10);
  }
}
