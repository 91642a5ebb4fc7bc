// Image models (layers/models/): the patch input (each token a patch of the image through one
// linear map), learned2d positions (a row and a column vector per token of the grid), and the
// config errors of both.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "layers/models/model.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;

using test::batch_of;
using test::build_model;
using test::logits_of;
using test::params_of;
using test::tiny_model_config;

TEST_CASE(
    "image models: patch input embeds each patch of the image; padding and other lengths refused") {
  // A 6 x 6 image in 3 x 3 patches every 2 pixels: 9 tokens + the CLS vector.
  ModelConfig m = tiny_model_config();
  m.own.set("input", "patches");
  m.vocab_size = 256;
  m.max_len = 36;
  m.positional = test::options("model.positional", {{"type", "fastrpb2d"}});
  m.positional.set_list("grid", {"3", "3"});
  auto model = build_model(m);
  auto p = params_of(*model);
  CHECK(p["encoder.patch_proj.weight"].shape() == Shape{8, 9});
  CHECK(p["encoder.position.weight"].shape() == Shape{10, 8});
  CHECK(p.count("encoder.pixel_proj.weight") == 0);
  std::vector<std::vector<int64_t>> images(2);
  for (int64_t i = 0; i < 36; ++i) {
    images[0].push_back(i * 7);
    images[1].push_back(255 - i);
  }
  const auto batch = batch_of(images, 36);
  const Var y = model->forward({batch.first, batch.second, {}, {}});
  CHECK(y.shape() == Shape{2, 3});
  sum(y).backward();
  CHECK(sum(abs(p["encoder.patch_proj.weight"].grad())).item() > 0);
  // Each image alone gives its logits in the batch (no mixing across the batch).
  model->eval();
  const Tensor both = logits_of(*model, batch);
  const Tensor first = logits_of(*model, batch_of({images[0]}, 36));
  CHECK_CLOSE(first, both.slice(0, 0, 1), 1e-6, 1e-6);
  // A pixel of the last row changes the output (the bottom border is inside the patches).
  std::vector<std::vector<int64_t>> brighter = images;
  brighter[0][35] = 0;
  CHECK(max(abs(sub(logits_of(*model, batch_of(brighter, 36)), both))).item() > 0);
  const std::string why =
      "[model] input 'patches' reads whole images of 36 pixels; got a batch of ";
  CHECK(test::error_of([&] {
          logits_of(*model, batch_of({images[0], {1, 2, 3}}, 36));
        }).find(why) == 0);
  CHECK(test::error_of([&] { logits_of(*model, batch_of({{1, 2, 3}}, 30)); }).find(why) == 0);
}

TEST_CASE("image models: FastRPB 2D reads whole images, whichever batch an example sits in") {
  // Token input of a 3 x 3 grid: an example shorter than the grid was read as a padded image
  // when a longer example shared its batch, and refused in a batch of its own (the output of a
  // prediction depended on its batch). Every batch with padding or another length is refused.
  ModelConfig m = tiny_model_config();
  m.vocab_size = 16;
  m.max_len = 9;
  m.positional = test::options("model.positional", {{"type", "fastrpb2d"}});
  auto model = build_model(m);
  model->eval();
  const std::vector<int64_t> whole = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(logits_of(*model, batch_of({whole}, 9)).shape() == Shape{1, 3});
  const std::string why =
      "[model] positional 'fastrpb2d' reads whole images of 9 pixels; got a batch of ";
  CHECK(test::error_of([&] { logits_of(*model, batch_of({whole, {1, 2, 3}}, 9)); }).find(why) == 0);
  CHECK(test::error_of([&] { logits_of(*model, batch_of({{1, 2, 3}}, 3)); }).find(why) == 0);
  // Pixels framed by [CLS] and [SEP] ids (cls: token) are whole images too.
  m.own.set("input", "pixels");
  m.own.set("cls", "token");
  m.vocab_size = 256;
  model = build_model(m);
  model->eval();
  CHECK(logits_of(*model, batch_of({whole, whole}, 11, model->special_tokens())).shape() ==
        Shape{2, 3});
  CHECK(test::error_of([&] {
          logits_of(*model, batch_of({whole, {1, 2, 3}}, 11, model->special_tokens()));
        }).find(why) == 0);
}

TEST_CASE(
    "image models: learned2d positions place the pixels of a grid; [CLS] and [SEP] get their own") {
  // [CLS] + a 2 x 3 image + [SEP]: row [2, d] and col [3, d] for the pixels, special [2, d].
  ModelConfig m = tiny_model_config();
  m.own.set("input", "pixels");
  m.vocab_size = 256;
  m.own.set("cls", "token");
  m.max_len = 6;
  m.positions = "learned2d";
  m.own.set_list("position_grid", {"2", "3"});
  m.own.set("position_init_std", 0.5);
  auto model = build_model(m);
  auto p = params_of(*model);
  CHECK(p.count("encoder.position.weight") == 0);
  CHECK(p["encoder.position.special"].shape() == Shape{2, 8});
  CHECK(p["encoder.position.row"].shape() == Shape{2, 8});
  CHECK(p["encoder.position.col"].shape() == Shape{3, 8});
  const auto pixels =
      batch_of({{0, 255, 128, 7, 9, 30}, {255, 255, 0, 1, 2, 3}}, 8, model->special_tokens());
  const Var y = model->forward({pixels.first, pixels.second, {}, {}});
  sum(y).backward();
  for (const char* name :
       {"encoder.position.special", "encoder.position.row", "encoder.position.col"})
    CHECK_MESSAGE(sum(abs(p[name].grad())).item() > 0, name);
  // A CLS vector and no [SEP]: no special row is needed beyond the CLS's.
  m.own.set("cls", "vector");
  CHECK(params_of(*build_model(m))["encoder.position.special"].shape() == Shape{1, 8});
  // The tables start at N(0, position_init_std): 400 x 100 draws.
  m.own.set_list("position_grid", {"400", "100"});
  m.max_len = 40000;
  m.model_dim = 100;
  m.num_heads = 4;
  m.attention = test::options("model.attention", {{"type", "linear"}, {"feature_map", "elu1"}});
  const auto row = params_of(*build_model(m))["encoder.position.row"].value().to_vector<float>();
  double m2 = 0;
  for (float v : row) m2 += static_cast<double>(v) * v / static_cast<double>(row.size());
  CHECK(std::sqrt(m2) == doctest::Approx(0.5).epsilon(0.02));
}

TEST_CASE("image models: bad configs name the field, the value and what fits") {
  const auto error = [](const std::function<void(ModelConfig&)>& edit) {
    ModelConfig c = tiny_model_config();
    edit(c);
    return test::error_of([&] { build_model(c); });
  };
  CHECK(error([](ModelConfig& c) { c.positions = "learned2d"; }) ==
        "[model] positions 'learned2d' needs position_grid: [rows, cols] with rows x cols = "
        "8 (the tokens of the image, row-major), got []");
  CHECK(error([](ModelConfig& c) {
          c.positions = "learned2d";
          c.own.set_list("position_grid", {"3", "3"});
        }) ==
        "[model] positions 'learned2d' needs position_grid: [rows, cols] with rows x cols = "
        "8 (the tokens of the image, row-major), got [3, 3]");
  CHECK(error([](ModelConfig& c) {
          c.positions = "learned2d";
          c.own.set_list("position_grid", {"-2", "-4"});
        }).find("got [-2, -4]") != std::string::npos);
  // 2^62 + 2 rows of 4 are 2^64 + 8 tokens, which wrapped onto the 8 of the image.
  CHECK(error([](ModelConfig& c) {
          c.positions = "learned2d";
          c.own.set_list("position_grid", {"4611686018427387906", "4"});
        }).find("got [4611686018427387906, 4]") != std::string::npos);
  CHECK(error([](ModelConfig& c) {
          c.own.set_list("position_grid", {"2", "4"});
        }) ==
        "[model] position_grid is read by positions 'learned2d' only, got positions 'learned'");
  CHECK(error([](ModelConfig& c) {
          c.type = "causal_lm";
          c.positions = "learned2d";
          c.own.set_list("position_grid", {"2", "4"});
        }) ==
        "[model] positions 'learned2d' places the pixels of an image; causal_lm reads a "
        "sequence (use learned, sinusoidal or none)");
  const auto patches = [](ModelConfig& c) {
    c.own.set("input", "patches");
    c.vocab_size = 256;
    c.max_len = 36;
  };
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.max_len = 35;
        }) ==
        "[model] input 'patches' reads a square image: max_len 35 is not a square number of "
        "pixels");
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.own.set("patch_stride", 4);
        }) ==
        "[model] input 'patches' needs patch_stride > 0 dividing the image side 6 and "
        "patch_size >= patch_stride (every pixel in a patch), got patch_size 3 "
        "patch_stride 4");
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.own.set("patch_size", -1);
        }) == "[model] patch_size must be >= 0, got -1");
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.own.set("cls", "token");
        }) ==
        "[model] input 'patches' reads whole images: [CLS] / [SEP] ids among the pixels "
        "would be read as pixels (use cls: vector)");
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.vocab_size = 11;
        }) ==
        "[model] input 'patches' takes 8-bit values (ids 0-255): vocab_size must be 256, "
        "got 11");
  CHECK(error([](ModelConfig& c) { c.own.set("patch_size", 3); }) ==
        "[model] patch_size and patch_stride are read by input 'patches' only, got input "
        "'tokens'");
  // Classifier keys are not a language model's: refused by name.
  CHECK(error([](ModelConfig& c) {
          c.type = "causal_lm";
          c.own = Options("model");
          c.own.set("patch_stride", 2);
        }).find("[model] unknown option 'patch_stride'; known: mem_len,") == 0);
  // learned2d counts the patches, not the pixels.
  CHECK(error([&](ModelConfig& c) {
          patches(c);
          c.positions = "learned2d";
          c.own.set_list("position_grid", {"6", "6"});
        }) ==
        "[model] positions 'learned2d' needs position_grid: [rows, cols] with rows x cols = "
        "9 (the tokens of the image, row-major), got [6, 6]");
}
