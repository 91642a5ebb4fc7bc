// Module registry: PyTorch-style dotted names and shapes of a nested model, train/eval
// propagation, zero_grad, name errors, shared submodules, and to(Device).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/functions.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/positional/absolute.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

// A toy transformer block: norm -> feed-forward, plus a bare parameter and a buffer.
class ToyBlock : public Module {
 public:
  explicit ToyBlock(int64_t dim) {
    norm_ = register_module("norm", std::make_shared<LayerNorm>(dim));
    ffn_ =
        register_module("ffn", std::make_shared<FeedForward>(dim, 2 * dim, Activation::relu, 0.5));
    scale_ = Var(ones({1}), true);
    register_parameter("scale", scale_);
    steps_ = zeros({1});
    register_buffer("steps", steps_);
  }
  Var forward(const Var& x) { return ffn_->forward(norm_->forward(x)) * scale_; }

  // Exposes the protected registration for the error tests.
  void add_param(const std::string& name, Var& v) { register_parameter(name, v); }
  void add_child(const std::string& name) { register_module(name, std::make_shared<LayerNorm>(3)); }

  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<FeedForward> ffn_;
  Var scale_;
  Tensor steps_;
};

class ToyEncoder : public Module {
 public:
  ToyEncoder(int64_t dim, int n) {
    layers_ = register_module("layers", std::make_shared<ModuleList>());
    for (int i = 0; i < n; ++i) layers_->push_back(std::make_shared<ToyBlock>(dim));
  }
  std::shared_ptr<ModuleList> layers_;
};

class ToyModel : public Module {
 public:
  explicit ToyModel(int64_t dim) {
    encoder_ = register_module("encoder", std::make_shared<ToyEncoder>(dim, 3));
    head_ = register_module("head", std::make_shared<Linear>(dim, 2));
  }
  std::shared_ptr<ToyEncoder> encoder_;
  std::shared_ptr<Linear> head_;
};

}  // namespace

TEST_CASE("module: nested dotted names and shapes follow torch, in registration order") {
  ToyModel model(4);
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  for (const auto& [name, p] : model.named_parameters()) {
    names.push_back(name);
    shapes.push_back(p.shape());
  }
  std::vector<std::string> want_names;
  std::vector<Shape> want_shapes;
  for (int i = 0; i < 3; ++i) {
    const std::string b = "encoder.layers." + std::to_string(i) + ".";
    // As torch: a module's own parameters first, then each submodule's.
    for (const char* n : {"scale", "norm.weight", "norm.bias", "ffn.fc1.weight", "ffn.fc1.bias",
                          "ffn.fc2.weight", "ffn.fc2.bias"})
      want_names.push_back(b + n);
    for (const Shape& s :
         {Shape{1}, Shape{4}, Shape{4}, Shape{8, 4}, Shape{8}, Shape{4, 8}, Shape{4}})
      want_shapes.push_back(s);
  }
  want_names.insert(want_names.end(), {"head.weight", "head.bias"});
  want_shapes.insert(want_shapes.end(), {Shape{2, 4}, Shape{2}});
  CHECK(names == want_names);
  CHECK(shapes == want_shapes);
  CHECK(model.parameters().size() == want_names.size());
  // 3 * (4 + 4 + 32 + 8 + 32 + 4 + 1) + 8 + 2
  CHECK(model.num_parameters() == 3 * 85 + 10);
  for (const Var& p : model.parameters()) CHECK(p.requires_grad());

  const auto buffers = model.named_buffers();
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[2].first == "encoder.layers.2.steps");
  CHECK(model.encoder_->layers_->at<ToyBlock>(1)->ffn_->fc1().out_features() == 8);
  CHECK_THROWS_AS(model.encoder_->layers_->at<Linear>(0), Error);
}

TEST_CASE("module: train/eval propagate to every submodule; new submodules inherit the mode") {
  ToyModel model(4);
  const auto all_in = [&](bool mode) {
    bool ok = model.is_training() == mode;
    for (int i = 0; i < 3; ++i) {
      const auto block = model.encoder_->layers_->at<ToyBlock>(i);
      ok = ok && block->is_training() == mode && block->ffn_->is_training() == mode &&
           block->ffn_->children()[1].second->is_training() == mode;  // the dropout
    }
    return ok && model.head_->is_training() == mode;
  };
  CHECK(all_in(true));
  model.eval();
  CHECK(all_in(false));
  // Dropout (p = 0.5) is the identity in eval: the block is deterministic.
  auto block = model.encoder_->layers_->at<ToyBlock>(0);
  const Var x(test::random_tensor({2, 3, 4}, DType::f32, 1));
  CHECK(block->forward(x).value().to_vector<float>() ==
        block->forward(x).value().to_vector<float>());
  model.encoder_->layers_->push_back(std::make_shared<ToyBlock>(4));
  CHECK_FALSE(model.encoder_->layers_->at<ToyBlock>(3)->is_training());
  model.train();
  CHECK(all_in(true));
}

TEST_CASE("module: zero_grad clears the gradient of every parameter") {
  ToyModel model(4);
  auto block = model.encoder_->layers_->at<ToyBlock>(2);
  block->eval();
  const Var x(test::random_tensor({2, 5, 4}, DType::f32, 2));
  sum(model.head_->forward(block->forward(x))).backward();
  int with_grad = 0;
  for (const auto& [name, p] : model.named_parameters()) with_grad += p.grad().defined();
  CHECK(with_grad == 9);  // block 2's 7 and the head's 2
  model.zero_grad();
  for (const auto& [name, p] : model.named_parameters()) {
    RELPOS_INFO("{}", name);
    CHECK_FALSE(p.grad().defined());
  }
}

TEST_CASE("module: duplicate, empty and dotted names are refused with [module] errors") {
  ToyBlock block(3);
  Var v(ones({2}), true);
  CHECK_THROWS_WITH_AS(block.add_param("scale", v), "[module] name 'scale' is already registered",
                       Error);
  CHECK_THROWS_WITH_AS(block.add_child("ffn"), "[module] name 'ffn' is already registered", Error);
  CHECK_THROWS_WITH_AS(block.add_param("steps", v), "[module] name 'steps' is already registered",
                       Error);
  CHECK_THROWS_WITH_AS(block.add_param("a.b", v),
                       "[module] name 'a.b' contains '.', which separates nested names", Error);
  CHECK_THROWS_WITH_AS(block.add_param("", v), "[module] empty name", Error);
  Var undefined;
  CHECK_THROWS_AS(block.add_param("u", undefined), Error);
  // The failed registrations left the registry unchanged.
  CHECK(block.named_parameters().size() == 7);
}

TEST_CASE("module: a submodule shared by two parents is listed once, under its first name") {
  class Pair : public Module {
   public:
    Pair() {
      auto shared = std::make_shared<Linear>(3, 3);
      a_ = register_module("a", shared);
      b_ = register_module("b", shared);
    }
    std::shared_ptr<Linear> a_, b_;
  };
  Pair pair;
  std::vector<std::string> names;
  for (const auto& [name, p] : pair.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"a.weight", "a.bias"});
  CHECK(pair.num_parameters() == 12);
  std::vector<std::string> modules;
  for (const auto& entry : pair.named_modules()) modules.push_back(entry.first);
  CHECK(modules == std::vector<std::string>{"", "a"});
  CHECK(pair.named_modules()[1].second == pair.a_.get());
}

TEST_CASE("module: named_modules lists every module by dotted path, depth first in order") {
  ToyModel model(4);
  std::vector<std::string> paths;
  for (const auto& entry : model.named_modules()) paths.push_back(entry.first);
  std::vector<std::string> want{"", "encoder", "encoder.layers"};
  for (int i = 0; i < 3; ++i)
    for (const char* sub : {"", ".norm", ".ffn", ".ffn.fc1", ".ffn.dropout", ".ffn.fc2"})
      want.push_back("encoder.layers." + std::to_string(i) + sub);
  want.push_back("head");
  CHECK(paths == want);
  CHECK(model.named_modules().front().second == &model);
}

TEST_CASE("module: tie_parameter makes layers train one Var, listed once, kept through to()") {
  ToyModel model(4);
  const Var shared(ones({1}, DType::f32), true);
  for (int i = 0; i < 3; ++i)
    model.tie_parameter("encoder.layers." + std::to_string(i) + ".scale", shared);
  auto layer = [&](int i) { return model.encoder_->layers_->at<ToyBlock>(i); };
  for (int i = 0; i < 3; ++i) CHECK(layer(i)->scale_.impl() == shared.impl());
  std::vector<std::string> scales;
  for (const auto& [name, p] : model.named_parameters())
    if (name.find("scale") != std::string::npos) scales.push_back(name);
  CHECK(scales == std::vector<std::string>{"encoder.layers.0.scale"});
  // One gradient, summed over the three uses.
  const Var x(test::random_tensor({2, 4}, DType::f32, 5));
  Var y = layer(0)->forward(x) + layer(1)->forward(x) + layer(2)->forward(x);
  sum(y).backward();
  CHECK(shared.grad().defined());
  // Moving keeps the tie: the layers still share one leaf.
  if (cuda_available()) {
    model.to(Device::cuda());
    CHECK(layer(0)->scale_.impl() == layer(2)->scale_.impl());
    CHECK(layer(1)->scale_.device() == Device::cuda());
    model.to(Device::cpu());
    CHECK(layer(0)->scale_.impl() == layer(1)->scale_.impl());
  } else {
    MESSAGE("SKIPPED (no CUDA device): tied parameters through to(cuda)");
  }
  CHECK(test::error_of([&] { model.tie_parameter("encoder.layers.0.nope", shared); }) ==
        "[module] no parameter 'encoder.layers.0.nope' to tie");
  const std::string mismatch = test::error_of([&] { model.tie_parameter("head.weight", shared); });
  CHECK(mismatch.find("[module] cannot tie parameter 'head.weight' of shape") == 0);
}

TEST_CASE("module: to(device) keeps the member and the registry the same Var") {
  ToyModel model(4);
  const Tensor before = model.head_->weight().value();
  model.to(Device::cpu());  // already there: nothing changes
  CHECK(model.head_->weight().value().storage() == before.storage());
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): Module::to(cuda) moving parameters and buffers");
    return;
  }
  model.to(Device::cuda());
  for (const auto& [name, p] : model.named_parameters()) {
    RELPOS_INFO("{}", name);
    CHECK(p.device() == Device::cuda());
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
  }
  for (const auto& [name, b] : model.named_buffers()) CHECK(b.device() == Device::cuda());
  // The member was re-pointed: the registry's Var is the layer's member.
  CHECK(model.named_parameters().back().second.impl() == model.head_->bias().impl());
  CHECK(model.head_->weight().value().to_vector<float>() == before.to_vector<float>());
  // A forward on the device agrees with the CPU one (dropout off).
  model.eval();
  auto block = model.encoder_->layers_->at<ToyBlock>(0);
  const Tensor x = test::random_tensor({2, 3, 4}, DType::f32, 3);
  const Tensor y_gpu = block->forward(Var(x.to(Device::cuda()))).value().to(Device::cpu());
  model.to(Device::cpu());
  CHECK_CLOSE(y_gpu, block->forward(Var(x)).value(), 1e-5, 1e-6);
}
