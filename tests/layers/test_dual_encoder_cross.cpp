// dual_encoder with interaction: cross_attention — each document attends to the other (Lq != Lk,
// both counted from position 0: seed 004's cross attention) before pooling. The logits equal the
// interaction composed by hand (LayerNorm, projections, Q·Kᵀ + the skew bias and softmax by loops,
// the MLP head) over the model's own encoder outputs and parameters; f64 gradients match central
// differences; what it refuses it names.
#include <cmath>

#include "autograd/functions.h"
#include "layers/attention/skew.h"
#include "layers/models/encoder.h"
#include "tests/harness.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;

namespace {

constexpr int64_t kB = 2, kD = 8, kH = 2, kDh = 4;

ModelConfig cross_config(const std::string& positional) {
  ModelConfig c = test::tiny_model_config(DType::f64);
  c.type = "dual_encoder";
  c.num_layers = 1;
  c.own.set("combine", "features");
  c.own.set("interaction", "cross_attention");
  c.positional = test::options("model.positional", {{"type", positional}});
  return c;
}

TransformerEncoder& encoder_of(Module& model) {
  for (const auto& [name, child] : model.children())
    if (name == "encoder") return dynamic_cast<TransformerEncoder&>(*child);
  FAIL("no encoder");
  throw Error("unreachable");
}

// [B * L, H * Dh] -> [B, H, L, Dh]
Tensor heads(const Tensor& t, int64_t len) {
  return t.reshape({kB, len, kH, kDh}).permute({0, 2, 1, 3}).contiguous();
}

// x [B, Lx, d] attends y [B, Ly, d] (y_mask [B, Ly]) through the pre-LN interaction, by loops for
// the scores (Q·Kᵀ + the skew bias S), softmax and weighted sum.
Tensor naive_cross(std::map<std::string, Var>& p, const Tensor& x, const Tensor& y,
                   const Tensor& y_mask) {
  const int64_t lx = x.size(1), ly = y.size(1);
  const std::string a = "interaction.";
  const Tensor nx = test::naive_layer_norm(x, p[a + "ln.weight"], p[a + "ln.bias"]);
  const Tensor ny = test::naive_layer_norm(y, p[a + "ln.weight"], p[a + "ln.bias"]);
  const Tensor q =
      heads(test::dense(nx.reshape({kB * lx, kD}), p[a + "attn.q_proj.weight"], {}), lx);
  const Tensor k =
      heads(test::dense(ny.reshape({kB * ly, kD}), p[a + "attn.k_proj.weight"], {}), ly);
  const Tensor v =
      heads(test::dense(ny.reshape({kB * ly, kD}), p[a + "attn.v_proj.weight"], {}), ly);
  const Tensor scores =
      add(test::naive_scores(q, k),
          test::naive_skew_scores(q, p[a + "attn.positional.weight"].value(), ly));
  AttentionInputs in;
  in.key_mask = y_mask;
  const Tensor att = test::naive_softmax_from_scores(scores, v, in, kDh);
  const Tensor merged = att.permute({0, 2, 1, 3}).contiguous().reshape({kB * lx, kH * kDh});
  return add(x, test::dense(merged, p[a + "attn.out_proj.weight"], {}).reshape({kB, lx, kD}));
}

}  // namespace

TEST_CASE("dual encoder: cross attention with skew equals its formula by loops, Lq != Lk") {
  ModelConfig c = cross_config("skew");
  auto model = test::build_model(c, 31);
  auto p = test::params_of(*model);
  for (const char* name : {"interaction.ln.weight", "interaction.ln.bias"})
    p[name].set_value(test::random_tensor(p[name].shape(), DType::f64, 32, -1, 1));
  const auto first = test::batch_of(test::kRows, 5);                       // L1 = 1 + 5
  const auto second = test::batch_of({{2, 7, 1, 8, 2, 8, 1}, {4, 5}}, 7);  // L2 = 1 + 7
  const Tensor got =
      model->forward({first.first, first.second, second.first, second.second}).value();

  TransformerEncoder& encoder = encoder_of(*model);
  const EncoderOutput a = encoder.forward(first.first, first.second);
  const EncoderOutput b = encoder.forward(second.first, second.second);
  REQUIRE(a.hidden.size(1) != b.hidden.size(1));
  const Tensor u = naive_cross(p, a.hidden.value(), b.hidden.value(), b.key_mask).select(1, 0);
  const Tensor v = naive_cross(p, b.hidden.value(), a.hidden.value(), a.key_mask).select(1, 0);
  const Tensor pair = cat({u, v, mul(u, v), sub(u, v)}, 1);  // "features"
  const Tensor h1 = relu(test::dense(pair, p["head.fc1.weight"], p["head.fc1.bias"]));
  const Tensor h2 = relu(test::dense(h1, p["head.fc2.weight"], p["head.fc2.bias"]));
  CHECK_CLOSE(got, test::dense(h2, p["head.fc3.weight"], p["head.fc3.bias"]), 1e-10, 1e-12);
}

TEST_CASE("dual encoder: cross attention's f64 parameter gradients match central differences") {
  for (const char* positional : {"skew", "shaw"}) {
    INFO(positional);
    auto model = test::build_model(cross_config(positional), 33);
    const auto first = test::batch_of(test::kRows, 5);
    const auto second = test::batch_of({{2, 7, 1}, {4, 5, 9, 9}}, 4);
    const ClassifierInputs in{first.first, first.second, second.first, second.second};
    const Tensor r = test::random_tensor({kB, 3}, DType::f64, 34);
    const auto loss = [&] { return sum(mul(model->forward(in).value(), r)).item(); };
    model->zero_grad();
    model->forward(in).backward(r);
    int64_t checked = 0;
    for (auto& [name, param] : model->named_parameters()) {
      if (name.rfind("interaction.", 0) != 0) continue;
      RELPOS_INFO("{}", name);
      Var& w = param;
      const Tensor w0 = w.value().clone();
      const double analytic = w.grad().contiguous().data<double>()[0];
      const auto at = [&](double delta) {
        Tensor moved = w0.clone();
        moved.data<double>()[0] += delta;
        w.set_value(moved);
        return loss();
      };
      const double numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
      w.set_value(w0);
      CHECK(std::abs(analytic - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
      ++checked;
    }
    CHECK(checked >= 7);  // ln (2), q/k/v/out projections (4), the encoding's weight
  }
}

TEST_CASE("dual encoder: interaction is refused outside the dual encoder, and unknown ones named") {
  ModelConfig single = test::tiny_model_config();
  single.own.set("interaction", "cross_attention");
  // A key of dual_encoder's own: sequence_classifier does not know it.
  CHECK(test::error_of([&] {
          test::build_model(single);
        }).find("[model] unknown option 'interaction'; known: cls,") == 0);
  ModelConfig unknown = cross_config("skew");
  unknown.own.set("interaction", "cross");
  CHECK(test::error_of([&] { test::build_model(unknown); }) ==
        "[model] unknown interaction 'cross'; known: none, cross_attention");
}
