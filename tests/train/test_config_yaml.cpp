// The YAML of a configuration as relpos reads it: null removing the value a base or an override
// gave a key, keys with no value, and the text's own errors (repeated keys, tab indentation,
// keys that are not plain names, a second document, merge keys, NUL bytes, alias bombs, nesting).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/harness.h"
#include "tests/train/config_testing.h"
#include "train/config.h"

using namespace relpos;
using test::load_error;

TEST_CASE("config: null removes the value a base or an earlier --set gave a key, and only that") {
  test::ScratchDir dir;
  dir.write("base.yaml", R"(
model: {type: transformer_xl, num_layers: 1, mem_len: 8, attention: {type: rel_xl, dropout: 0.1}}
data: {dataset: chars, tgt_len: 8}
optimizer: {type: adam, lr: 1.0e-3}
eval: {mem_len: 16}
train: {steps: 10}
)");
  // The shipped transformer_lm config's way: a key its type does not read, removed.
  const std::string lm = dir.write("lm.yaml", R"(
base: base.yaml
model: {type: transformer_lm, mem_len: null, attention: softmax}
eval: {mem_len: ~}
)");
  const RunConfig c = load_config(lm);
  CHECK(c.model.type == "transformer_lm");
  CHECK_FALSE(c.eval.mem_len.has_value());
  CHECK(c.yaml.find("mem_len") == std::string::npos);
  CHECK(load_config(lm, {"optimizer.lr=null"}).optimizer.get<double>("lr", 7) == 7);
  // A known key with no value and nothing to remove is its default.
  CHECK(load_config(lm, {"model.max_len=~", "model.positional=null"}).model.max_len == 0);

  // A null that removes nothing on a key nothing reads is an unknown key, wherever it is written;
  // `{type:linear}` (no space after the colon) is the key "type:linear" with no value.
  CHECK(load_error(lm, {"model.mystery=null"})
            .find("[config] unknown key 'model.mystery'; valid keys of 'model': ") == 0);
  CHECK(load_error(lm, {"data.mystery="}).find("[config] unknown key 'data.mystery'") == 0);
  CHECK(load_error(lm, {"optimizer.mystery=null"})
            .find("[optimizer] unknown option 'mystery'; known: ") == 0);
  // (The attention's keys are refused when the model is built: test_bad_input.sh.)
  const RunConfig colon = load_config(lm, {"model.attention={type:linear}"});
  CHECK(colon.model.attention.unread() == std::vector<std::string>{"type:linear"});
  CHECK(test::error_of([&] {
          colon.model.attention.check_all_used();
        }).find("(YAML needs a space after a key's colon: 'type: linear', not 'type:linear')") !=
        std::string::npos);
  CHECK(load_error(lm, {"train={steps:2}"})
            .find("[config] unknown key 'train.steps:2'; valid keys of 'train': ") == 0);
  const std::string typo = dir.write("typo.yaml", "base: base.yaml\nmodel: {num_layers:4}\n");
  CHECK(load_error(typo).find("[config] unknown key 'model.num_layers:4'") == 0);
  CHECK(load_error(typo).find("(YAML needs a space after a key's colon: 'num_layers: 4', not "
                              "'num_layers:4')") != std::string::npos);

  // Text relpos wrote (a checkpoint's) drops keys without a value: older versions kept the
  // removed `mem_len: ~` of a transformer_lm, which no reader knows.
  std::string written = c.yaml;
  const size_t at = written.find("  type: transformer_lm");
  REQUIRE(at != std::string::npos);
  written.insert(at, "  mem_len: ~\n");
  const RunConfig again = parse_config(written, "checkpoint");
  CHECK(again.model.type == "transformer_lm");
  CHECK(test::error_of([&] {
          parse_config(written, "checkpoint", {"model.mystery=~"});
        }).find("[config] unknown key 'model.mystery'") == 0);
  CHECK(trajectory_changes(written, c.yaml).empty());
}

TEST_CASE("config: the YAML text's errors name the line and the cause") {
  test::ScratchDir dir;
  const std::string good = dir.write("good.yaml", test::kMinimalConfig);

  SUBCASE("a repeated key names both lines (YAML would keep only the last)") {
    const std::string twice =
        dir.write("twice.yaml",
                  "model:\n  num_layers: 1\n  num_layers: 2\ndata: {dataset: mnist}\n"
                  "optimizer: {type: adamw, lr: 1.0e-3}\ntrain: {steps: 10}\n");
    CHECK(load_error(twice, {}) ==
          "[config] '" + twice + "' line 3: key 'num_layers' repeats the one on line 2");
    CHECK(load_error(good, {"model={num_layers: 1, num_layers: 2}"}) ==
          "[config] override 'model={num_layers: 1, num_layers: 2}' line 1: key 'num_layers' "
          "repeats the one on line 1");
    CHECK(test::error_of([] { parse_config("a: 1\na: 2\n", "text"); }) ==
          "[config] 'text' line 2: key 'a' repeats the one on line 1");
  }
  SUBCASE("a line indented with a tab is named as such") {
    // yaml-cpp says only "illegal map value" or the like.
    CHECK(test::error_of([] { parse_config("seed: 1\nmodel:\n\tnum_layers: 2\n", "text"); }) ==
          "[config] 'text' line 3: illegal map value (line 3 indents with a tab; YAML indents "
          "with spaces)");
    CHECK(
        test::error_of([] { parse_config("model:\n  num_layers: 2\n \t mlp_dim: 8\n", "text"); }) ==
        "[config] 'text' line 3: illegal tab when looking for indentation");  // said already
    // Tabs elsewhere are not the cause: no hint.
    CHECK(test::error_of([] { parse_config("a:\tb\nc: [\n", "text"); }).find("tab") ==
          std::string::npos);
  }
  SUBCASE(
      "keys are plain names; one document; printable text; aliases cannot expand without bound") {
    // A list as a key was an internal error ("bad conversion"); a second document was ignored;
    // a NUL byte cut the text; ten levels of nine aliases each (1 KB) ran for hours.
    const std::string base = "model: {num_layers: 1}\ndata: {dataset: mnist}\n";
    CHECK(test::error_of([&] { parse_config(base + "? [a, b]\n: 1\n", "text"); }) ==
          "[config] 'text' line 3: a key must be a plain name, not a list or nothing");
    CHECK(load_error(good, {"model={[a]: 1}"}) ==
          "[config] override 'model={[a]: 1}' line 1: a key must be a plain name, not a list or "
          "nothing");
    CHECK(test::error_of([&] { parse_config(base + "---\nseed: 5\n", "text"); }) ==
          "[config] 'text' line 3: a second YAML document (after ---); a configuration is one");
    CHECK(test::error_of([&] { parse_config(base + "...\nseed: 5\n", "text"); }) ==
          "[config] 'text' line 4: a second YAML document (after ---); a configuration is one");
    CHECK(test::error_of([&] {
            parse_config("---\n" + base + "...\n", "text");
          }).find("second YAML document") == std::string::npos);  // markers of one document
    // yaml-cpp's LoadAll looped for ever on a text starting with ',' (found by fuzz_config).
    CHECK(test::error_of([] { parse_config(", a: 1\n", "text"); }) ==
          "[config] 'text' must be a mapping at the top level");
    // A merge key was read as a key named "<<" ("model.<<: nested mappings are not options").
    CHECK(
        test::error_of([] { parse_config("d: &d {num_layers: 1}\nmodel: {<<: *d}\n", "text"); }) ==
        "[config] 'text' line 2: YAML merge keys (<<) are not read; write the keys out, or build "
        "on another file with 'base:'");
    // A tag was dropped unread: `steps: !!str 5` trained 5 steps, `!!float 1` an integer.
    CHECK(test::error_of([&] { parse_config(base + "seed: !!str 5\n", "text"); }) ==
          "[config] 'text' line 3: the YAML tag 'tag:yaml.org,2002:str' is not read (each "
          "setting has one type); write the value plainly");
    CHECK(test::error_of([&] { parse_config(base + "!custom seed: 5\n", "text"); }) ==
          "[config] 'text' line 3: the YAML tag '!custom' is not read (each setting has one "
          "type); write the value plainly");
    CHECK(load_error(good, {"model=!!map {num_layers: 1}"}).find("the YAML tag") !=
          std::string::npos);
    CHECK_NOTHROW(load_config(good, {"name='quoted'"}));
    CHECK(test::error_of([&] { parse_config(base + std::string(1, '\0') + "x: 1\n", "text"); }) ==
          "[config] 'text' byte 46: a NUL byte; a configuration is text");
    // A quoted escape made a NUL or a newline inside a value or key, which cut the one-line
    // message quoting it ("unknown dataset 'ab").
    CHECK(load_error(good, {"data.dataset=\"ab\\0cd\""}) ==
          "[config] override 'data.dataset=\"ab\\0cd\"' line 1: a key or value holds the "
          "control byte 0x00; settings are printable text");
    CHECK(test::error_of([&] { parse_config(base + "name: \"run\\nx\"\n", "text"); }) ==
          "[config] 'text' line 3: a key or value holds the control byte 0x0a; settings are "
          "printable text");
    CHECK(test::error_of([&] { parse_config(base + "\"se\\x01ed\": 1\n", "text"); }) ==
          "[config] 'text' line 3: a key or value holds the control byte 0x01; settings are "
          "printable text");
    CHECK(load_error(good, {"train.out=\"runs/a\\tb\""}).empty());  // a tab is printable enough
    std::string bomb = base + "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i)
      bomb += fmt::format("a{}: &a{} [{}]\n", i, i,
                          fmt::join(std::vector<std::string>(9, fmt::format("*a{}", i - 1)), ", "));
    CHECK(test::error_of([&] {
            parse_config(bomb, "text");
          }).find("more than 1000000 values (aliases expanded): not a configuration") !=
          std::string::npos);
    // Past yaml-cpp's depth its error said only "bad file".
    CHECK(test::error_of([&] {
            parse_config(base + fmt::format("x: {:[<3000}{:]<3000}\n", "", ""), "text");
          }) == "[config] 'text' line 3: nested deeper than the YAML reader allows");
  }
}
