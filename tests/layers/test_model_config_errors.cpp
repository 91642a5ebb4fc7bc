// Model configs that cannot be built: each refused with the field, the value and the valid
// choices (trunk keys, a type's own keys, sizes), and attention / positional options that no
// layer read refused by name.
#include <functional>
#include <limits>
#include <string>

#include "core/allocator.h"
#include "core/cpu/available_memory.h"
#include "layers/models/model.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/lm_testing.h"
#include "tests/layers/model_testing.h"

using namespace relpos;

using test::batch_of;
using test::build_model;
using test::kRows;
using test::logits_of;
using test::tiny_model_config;

namespace {
std::optional<int64_t> quarter_gib_left() {
  return int64_t{256} << 20;
}
}  // namespace

TEST_CASE("models: bad configs fail with the field, the value and the valid choices") {
  const auto error = [](const std::function<void(ModelConfig&)>& edit) {
    ModelConfig c = tiny_model_config();
    edit(c);
    return test::error_of([&] { build_model(c); });
  };
  CHECK(error([](ModelConfig& c) { c.vocab_size = 0; }) ==
        "[model] vocab_size must be positive (0 means: take it from the dataset first), got 0");
  CHECK(error([](ModelConfig& c) { c.own.set("num_classes", 0); }) ==
        "[model] num_classes must be positive (0 means: take it from the dataset first), got 0");
  CHECK(error([](ModelConfig& c) { c.max_len = -1; }) ==
        "[model] max_len must be positive (0 means: take it from the dataset first), got -1");
  CHECK(error([](ModelConfig& c) { c.model_dim = 0; }) ==
        "[model] model_dim must be positive, got 0");
  // Past 2^40, where max_len + 2 (CLS and SEP) wrapped for the largest int64.
  CHECK(error([](ModelConfig& c) { c.max_len = std::numeric_limits<int64_t>::max(); }) ==
        "[model] max_len 9223372036854775807 is larger than any machine holds (at most 2^40)");
  CHECK(error([](ModelConfig& c) {
          c.qkv_dim = (int64_t{1} << 40) + 4;
        }).find("[model] qkv_dim 1099511627780 is larger") == 0);
  CHECK(error([](ModelConfig& c) {
          c.qkv_dim = 6;
          c.num_heads = 4;
        }) == "[model] qkv_dim 6 must be a multiple of num_heads 4");
  CHECK(error([](ModelConfig& c) { c.dropout = 1; }) == "[model] dropout must be in [0, 1), got 1");
  // A width only head_combiner 'stacked' reads was accepted and ignored.
  CHECK(error([](ModelConfig& c) { c.stacked_hidden = 32; }) ==
        "[model] stacked_hidden is the width of head_combiner 'stacked'; head_combiner 'concat' "
        "has no use for it (got 32)");
  // Transformer-XL's attention in an encoder was built and refused by the first training step
  // (its run folder left behind); with an encoding, by no model at all.
  CHECK(error([](ModelConfig& c) {
          c.attention = test::options("model.attention", {{"type", "rel_xl"}});
        }) ==
        "[model] an encoder attends both ways, and attention 'rel_xl' is causal only "
        "(Transformer-XL's relative attention: model.type transformer_xl)");
  CHECK(error([](ModelConfig& c) {
          c.attention = test::options("model.attention", {{"type", "rel_xl"}});
          c.positional = test::options("model.positional", {{"type", "shaw"}});
        }) ==
        "[MultiHeadAttention] attention 'rel_xl' encodes relative positions itself: it "
        "hosts no positional encoding (got 'shaw')");
  CHECK(error([](ModelConfig& c) {
          c.type = "transformer_xl";
          c.attention.set("type", "rel_xl");
          c.own.set("distance_dropout", 1.5);
        }) == "[model] distance_dropout must be in [0, 1), got 1.5");
  // Read from the classifier's keys: named as the key, not as the initializer's randn (which
  // it reached before).
  CHECK(error([](ModelConfig& c) { c.own.set("position_init_std", -1); }) ==
        "[model] position_init_std must be >= 0, got -1");
  CHECK(error([](ModelConfig& c) { c.norm = "mid"; }) ==
        "[model] unknown norm 'mid'; known: pre, post");
  CHECK(error([](ModelConfig& c) { c.positions = "rope"; }) ==
        "[model] unknown positions 'rope'; known: learned, learned2d, sinusoidal, none");
  CHECK(error([](ModelConfig& c) { c.own.set("cls", "first"); }) ==
        "[model] unknown cls 'first'; known: vector, token, none");
  CHECK(error([](ModelConfig& c) { c.own.set("pooling", "max"); }) ==
        "[model] unknown pooling 'max'; known: cls, mean");
  CHECK(error([](ModelConfig& c) { c.own.set("head", "linear"); }) ==
        "[model] unknown head 'linear'; known: mlp, tanh");
  CHECK(error([](ModelConfig& c) {
          c.type = "dual_encoder";
          c.own.set("combine", "sum");
        }) == "[model] unknown combine 'sum'; known: concat, features");
  CHECK(error([](ModelConfig& c) {
          c.own.set("combine", "features");
        }).find("[model] unknown option 'combine'; known: cls,") == 0);
  // Cross attention relates two documents of different lengths: FastRPB's W ran on a batch whose
  // documents padded alike and failed on the next, so whether an example ran depended on its
  // batch.
  CHECK(error([](ModelConfig& c) {
          c.type = "dual_encoder";
          c.own.set("interaction", "cross_attention").set("pooling", "mean");
          c.attention = test::options("model.attention", {{"type", "linear"}});
          c.positional = test::options("model.positional", {{"type", "fastrpb"}});
        }) ==
        "[model] dual_encoder's cross attention relates two documents, and positional "
        "'fastrpb' relates positions of one sequence: use interaction none or another encoding "
        "(skew, shaw, ...)");
  // FastRPB with special tokens cannot follow a memory: refused when built, not by the second
  // segment (the first has no memory).
  CHECK(error([](ModelConfig& c) {
          c.type = "causal_lm";
          c.own = test::options("model", {{"mem_len", "4"}});
          c.positions = "none";
          c.attention = test::options("model.attention", {{"type", "linear"}});
          c.positional = test::options("model.positional",
                                       {{"type", "fastrpb"}, {"special_tokens_front", "1"}});
        }) ==
        "[model] causal_lm: positional 'fastrpb' cannot follow a memory: queries after a memory "
        "need special_tokens_front and special_tokens_back 0, got 1 and 0; set mem_len: 0");
  CHECK(error([](ModelConfig& c) { c.own.set("input", "bytes"); }) ==
        "[model] unknown input 'bytes'; known: tokens, pixels, patches");
  CHECK(error([](ModelConfig& c) { c.activation = "silu"; }) ==
        "[model] unknown activation 'silu'; known: gelu, relu");
  CHECK(error([](ModelConfig& c) { c.own.set("cls", "none"); }) ==
        "[model] pooling 'cls' needs a CLS (cls: vector or token), got cls 'none'");
  CHECK(error([](ModelConfig& c) { c.own.set("input", "pixels"); }) ==
        "[model] input 'pixels' takes 8-bit values (ids 0-255): vocab_size must be 256, got 11");
  CHECK(error([](ModelConfig& c) { c.type = "seq2seq"; }) ==
        fmt::format("[model] unknown model 'seq2seq'; known: {}",
                    fmt::join(model_registry().names(), ", ")));
  // Too long a sequence for the positions the model was built for.
  auto model = build_model(tiny_model_config());
  CHECK(test::error_of([&] { logits_of(*model, batch_of(kRows, 9)); }) ==
        "[model] a sequence of 10 tokens exceeds the 9 the model is built for (max_len 8 plus "
        "special tokens)");
}

TEST_CASE("models: attention and positional options nothing read are refused by name") {
  ModelConfig c = tiny_model_config();
  c.attention = test::options("model.attention", {{"type", "softmax"}, {"dropuot", "0.1"}});
  CHECK(test::error_of([&] {
          build_model(c);
        }).find("[model.attention] unknown option 'dropuot'") == 0);
  // Linear attention takes no dropout: the model does not pass its attention_dropout to it, and
  // a `dropout` the user writes is refused.
  c.attention = test::options("model.attention", {{"type", "linear"}, {"feature_map", "elu1"}});
  c.attention_dropout = 0.1;
  CHECK(test::error_of([&] { build_model(c); }).empty());
  c.attention.set("dropout", "0.1");
  CHECK(test::error_of([&] {
          build_model(c);
        }).find("[model.attention] unknown option 'dropout'") == 0);
  c.attention = Options("model.attention");
  c.positional = test::options("model.positional", {{"type", "fastrpb"}, {"windw", "3"}});
  CHECK(test::error_of([&] { build_model(c); }).find("[model.positional] unknown option 'windw'") ==
        0);
  // The softmax default dropout goes into a copy: the user's mapping gains no key, and every
  // key it has was read.
  c.positional = Options("model.positional");
  c.attention = test::options("model.attention", {{"type", "softmax"}});
  build_model(c);
  CHECK_FALSE(c.attention.has("dropout"));
  CHECK(test::error_of([&] { c.attention.check_all_used(); }).empty());
}

TEST_CASE("models: a trunk whose blocks do not fit is refused after its first block") {
  // num_layers 10^12 built blocks until the machine's memory was spent (2 minutes and 23 GB on a
  // 24 GB machine) before the allocator refused one; the parameters of the rest are checked once
  // the first is built. Here the system has 256 MiB left.
  const Device cpu = Device::cpu();
  const cpu::AvailableMemoryReader real = cpu::set_available_memory_reader(&quarter_gib_left);
  for (const std::string type : {"sequence_classifier", "transformer_xl"}) {
    ModelConfig c = tiny_model_config();
    c.type = type;
    if (type == "transformer_xl") {
      c.attention.set("type", "rel_xl");
      c.own = Options("model");  // no num_classes
    }
    c.num_layers = 1000000;
    reset_peak_memory(cpu);
    Generator gen(1);
    const std::string error = test::error_of([&] { (void)make_model(c, gen); });
    RELPOS_INFO("{}: {}", type, error);
    CHECK(error.find(type + " with num_layers 1000000, ") == 8);
    CHECK(error.find("does not fit in memory: [cpu allocator] the parameters of 999999 more "
                     "blocks of ") != std::string::npos);
    CHECK(memory_stats(cpu).allocations < 200);  // one block's parameters, not a million
    c.num_layers = 3;
    CHECK_NOTHROW((void)make_model(c, gen));
  }
  cpu::set_available_memory_reader(real);
}

// `chunk` orders causal linear attention's sums; a classifier attends both ways and read it for
// nothing. Its default stays accepted there: a classifier's config.yaml lists every key read.
TEST_CASE("models: linear attention's chunk is refused in a classifier but for its default") {
  const auto linear_with_chunk = [](ModelConfig& c, const std::string& chunk) {
    c.attention = test::options("model.attention", {{"type", "linear"}, {"chunk", chunk}});
  };
  for (const std::string type : {"sequence_classifier", "dual_encoder"}) {
    ModelConfig c = tiny_model_config();
    c.type = type;
    linear_with_chunk(c, "16");
    CHECK(test::error_of([&] { build_model(c); }) ==
          "[attention linear] chunk (16) only applies to causal attention (a language model); "
          "this model attends both ways");
    linear_with_chunk(c, "64");
    CHECK_NOTHROW(build_model(c));
  }
  ModelConfig lm = test::tiny_lm_config("causal_lm");
  linear_with_chunk(lm, "16");
  CHECK_NOTHROW(test::build_lm(lm));
}
