// Model test helpers (tests/layers/model_testing.h).
#include "tests/layers/model_testing.h"

#include "autograd/functions.h"
#include "core/ops.h"
#include "tests/harness.h"

#include <doctest/doctest.h>

namespace relpos::test {

ModelConfig tiny_model_config(DType dtype) {
  ModelConfig c;
  c.vocab_size = 11;
  c.own.set("num_classes", 3);
  c.max_len = 8;
  c.num_layers = 2;
  c.num_heads = 2;
  c.model_dim = 8;
  c.mlp_dim = 16;
  c.dropout = 0;
  c.attention_dropout = 0;
  c.dtype = dtype;
  return c;
}

std::shared_ptr<Classifier> build_model(const ModelConfig& c, uint64_t seed) {
  Generator gen(seed);
  return make_classifier(c, gen);
}

std::map<std::string, Var> params_of(const Module& m) {
  std::map<std::string, Var> out;
  for (const auto& [name, p] : m.named_parameters()) out.emplace(name, p);
  return out;
}

std::pair<Tensor, Tensor> batch_of(const std::vector<std::vector<int64_t>>& rows, int64_t len,
                                   SpecialTokens special) {
  std::vector<int64_t> ids;
  std::vector<uint8_t> mask;
  for (const auto& row : rows) {
    std::vector<int64_t> framed;
    if (special.cls_id >= 0) framed.push_back(special.cls_id);
    framed.insert(framed.end(), row.begin(), row.end());
    if (special.sep_id >= 0) framed.push_back(special.sep_id);
    REQUIRE(static_cast<int64_t>(framed.size()) <= len);
    for (int64_t i = 0; i < len; ++i) {
      const bool real = i < static_cast<int64_t>(framed.size());
      ids.push_back(real ? framed[i] : 0);
      mask.push_back(real ? 1 : 0);
    }
  }
  const int64_t batch = static_cast<int64_t>(rows.size());
  return {Tensor::from_vector(ids, {batch, len}), Tensor::from_vector(mask, {batch, len})};
}

void check_parameter_gradients(Module& model, const std::function<Var()>& forward) {
  const Var out = forward();
  const Tensor r = random_tensor(out.shape(), DType::f64, 12);
  const auto loss = [&] { return sum(mul(forward().value(), r)).item(); };
  model.zero_grad();
  out.backward(r);
  for (auto& [name, p] : model.named_parameters()) {
    RELPOS_INFO("{}", name);
    const Tensor p0 = p.value().clone();
    const Tensor analytic = p.grad().defined() ? p.grad() : zeros_like(p0);
    const int64_t n = p0.numel();
    for (int64_t k : {int64_t{0}, n / 2, n - 1}) {
      const auto at = [&, &p = p](double delta) {
        Tensor moved = p0.clone();
        moved.data<double>()[k] += delta;
        p.set_value(moved);
        return loss();
      };
      const double numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
      p.set_value(p0);
      const double a = analytic.contiguous().data<double>()[k];
      CHECK(std::abs(a - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
    }
  }
}

Tensor logits_of(Classifier& model, const std::pair<Tensor, Tensor>& batch) {
  return model.forward({batch.first, batch.second, {}, {}}).value();
}

Tensor dense(const Tensor& x, const Var& w, const Var& b) {
  Tensor y = matmul(x, w.value(), false, true);
  return b.defined() ? add(y, b.value()) : y;
}

Tensor naive_layer_norm(const Tensor& x, const Var& w, const Var& b) {
  const Tensor centered = sub(x, mean(x, {-1}, true));
  const Tensor var = mean(mul(centered, centered), {-1}, true);
  return add(mul(mul(centered, rsqrt(add_scalar(var, 1e-5))), w.value()), b.value());
}

}  // namespace relpos::test
