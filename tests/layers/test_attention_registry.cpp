// Options (typed reads, unknown keys refused by name), the registries (unknown names list the
// known ones), and MultiHeadAttention (torch parameter names and shapes, the projections and
// head split around the variant, positional hooks, refused combinations).
#include <string>

#include "layers/attention/multi_head.h"
#include "tests/layers/attention_testing.h"

using namespace relpos;

namespace {

// An encoding that needs a variant forming scores, registered from this file as a variant's
// own file would be.
class NeedsScores final : public Positional {
 public:
  explicit NeedsScores(const AttentionOptions&) {}
  std::string name() const override { return "test_needs_scores"; }
  void check_host(const Attention& a) const override {
    RELPOS_CHECK(a.caps().forms_scores, "positional test_needs_scores",
                 "attention '{}' forms no score matrix", a.name());
  }
};
RELPOS_REGISTER_POSITIONAL("test_needs_scores", NeedsScores);

}  // namespace

TEST_CASE("options: typed reads, lists, defaults and errors that name the key") {
  Options opt("attention");
  opt.set("type", "linear").set("nu", 2).set("eps", 1e-7).set("causal", true);
  opt.set_list("grid", {"28", "14"});
  CHECK(opt.get<std::string>("type", "") == "linear");
  CHECK(opt.get<int64_t>("nu", 1) == 2);
  CHECK(opt.get<double>("eps", 0.0) == 1e-7);
  CHECK(opt.get<bool>("causal", false));
  CHECK(opt.get<int>("missing", 5) == 5);
  CHECK(opt.get_list<int64_t>("grid", {}) == std::vector<int64_t>{28, 14});
  CHECK(opt.get_list<int64_t>("nu", {}) == std::vector<int64_t>{2});
  CHECK(test::error_of([&] { opt.get<int64_t>("type", 0); }) ==
        "[attention] option 'type' must be an integer, got 'linear'");
  CHECK(test::error_of([&] { opt.get<int64_t>("grid", 0); }).find("single value") !=
        std::string::npos);
  CHECK(test::error_of([&] { opt.require<double>("scale"); }) ==
        "[attention] option 'scale' is required");
  opt.check_all_used();
  opt.set("dropot", "0.1");
  const std::string e = test::error_of([&] { opt.check_all_used(); });
  CHECK(e.find("unknown option 'dropot'") != std::string::npos);
  CHECK(e ==
        "[attention] unknown option 'dropot'; known: causal, eps, grid, missing, nu, scale, type");
}

TEST_CASE("registry: unknown variants and options are refused with the valid choices") {
  const auto build = [](std::vector<std::pair<std::string, std::string>> kv) {
    return make_attention(test::attention_options(test::options("attention", kv), 2, 4));
  };
  CHECK(build({{"type", "softmax"}})->name() == "softmax");
  const std::string unknown = test::error_of([&] { build({{"type", "softmx"}}); });
  CHECK(unknown.find("unknown attention 'softmx'; known: ") != std::string::npos);
  CHECK(unknown.find("softmax") != std::string::npos);
  CHECK(test::error_of([&] {
          build({{"type", "softmax"}, {"dropot", "0.1"}});
        }).find("unknown option 'dropot'; known: dropout, fused, type") != std::string::npos);
  CHECK(build({})->name() == "softmax");  // an empty mapping is the default variant
  CHECK(make_positional(test::attention_options(Options("positional"), 2, 4)) == nullptr);
}

TEST_CASE("multi-head attention: torch names, shapes, and the projections around the variant") {
  Generator gen(3);
  MultiHeadAttentionConfig c;
  c.model_dim = 6;
  c.num_heads = 2;
  c.bias = true;
  c.dtype = DType::f64;
  c.gen = &gen;
  MultiHeadAttention mha(c);
  std::vector<std::string> names;
  for (const auto& [name, p] : mha.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"q_proj.weight", "q_proj.bias", "k_proj.weight",
                                          "k_proj.bias", "v_proj.weight", "v_proj.bias",
                                          "out_proj.weight", "out_proj.bias"});
  const Tensor xq = test::random_tensor({2, 3, 6}, DType::f64, 1);
  const Tensor xk = test::random_tensor({2, 5, 6}, DType::f64, 2);
  const Tensor mask = test::padding_mask(5, {2, 0});
  const Tensor y = mha.forward(Var(xq), Var(xk), mask, true).value();
  REQUIRE(y.shape() == Shape{2, 3, 6});

  // The same from the definition: per-head loops over projected inputs.
  AttentionInputs in{mask, true, nullptr};
  const auto params = mha.named_parameters();
  const auto linear = [&](int idx, const Tensor& x) {
    return add(matmul(x, params[2 * idx].second.value(), false, true),
               params[2 * idx + 1].second.value());
  };
  const auto heads = [](const Tensor& x) {
    return x.reshape({2, x.size(1), 2, 3}).transpose(1, 2).contiguous();
  };
  const Tensor q = heads(linear(0, xq)), k = heads(linear(1, xk)), v = heads(linear(2, xk));
  Tensor o = test::naive_softmax_from_scores(test::naive_scores(q, k), v, in, 3);
  o = o.transpose(1, 2).contiguous().reshape({2, 3, 6});
  CHECK_CLOSE(y, linear(3, o), 1e-12, 1e-12);
}

TEST_CASE("multi-head attention: an encoding refuses a variant it cannot work inside") {
  MultiHeadAttentionConfig c;
  c.model_dim = 4;
  c.num_heads = 2;
  c.positional = test::options("positional", {{"type", "test_needs_scores"}});
  MultiHeadAttention ok(c);
  CHECK(ok.positional() != nullptr);
  CHECK(test::error_of([&] {
          MultiHeadAttentionConfig bad = c;
          bad.model_dim = 5;
          MultiHeadAttention m(bad);
        }).find("multiple of num_heads") != std::string::npos);
}

TEST_CASE("multi-head attention: layers can share one positional encoding") {
  MultiHeadAttentionConfig c;
  c.model_dim = 4;
  c.num_heads = 2;
  c.max_len = 5;
  c.dtype = DType::f64;
  c.shared_positional = make_positional(test::attention_options(
      test::options("positional", {{"type", "fastrpb"}}), 2, 2, /*max_len=*/5));
  struct TwoLayers : Module {
    explicit TwoLayers(const MultiHeadAttentionConfig& c)
        : first(register_module("first", std::make_shared<MultiHeadAttention>(c))),
          second(register_module("second", std::make_shared<MultiHeadAttention>(c))) {}
    std::shared_ptr<MultiHeadAttention> first, second;
  } model(c);
  REQUIRE(model.first->positional() == model.second->positional());
  int listed = 0;
  for (const auto& [name, p] : model.named_parameters())
    listed += name.find("positional") != std::string::npos;
  CHECK(listed == 1);  // first.positional.weight only
  const Var x(test::random_tensor({1, 5, 4}, DType::f64, 3));
  const Var y = model.second->forward(model.first->forward(x));
  sum(y).backward();
  CHECK(c.shared_positional->named_parameters()[0].second.grad().defined());
  MultiHeadAttentionConfig both = c;
  both.positional = test::options("positional", {{"type", "fastrpb"}});
  CHECK(test::error_of([&] { MultiHeadAttention m(both); }).find("not both") != std::string::npos);
}
