// Run configuration: typed reading, base composition, --set overrides, and every user error
// (unknown key, wrong type, missing file, bad override, include cycle) with its message. The
// YAML text itself (null, repeated keys, tabs, documents, aliases): test_config_yaml.cpp.
#include <doctest/doctest.h>

#include <filesystem>

#include "layers/models/classifier_config.h"
#include "tests/harness.h"
#include "tests/train/config_testing.h"
#include "train/config.h"

using namespace relpos;
namespace fs = std::filesystem;
using test::load_error;

TEST_CASE("config: typed sections, defaults, derived names and the resolved text") {
  test::ScratchDir dir;
  const std::string path = dir.write("demo.yaml", R"(
model:
  num_layers: 3
  model_dim: 32
  tied_blocks: true
  attention: {type: linear, feature_map: sikf}
  positional: {type: fastrpb2d, grid: [14, 14], parameterization: full}
data: {dataset: mnist, image_pool: 2, batch_size: 16}
optimizer: {type: adamw, lr: 1.0e-3, betas: [0.9, 0.98]}
schedule: {type: linear_decay, warmup_steps: 5}
train: {epochs: 2, clip_grad_norm: 1.5, accumulate: 2, patience: 3, metric: macro_f1}
seed: 7
)");
  const RunConfig c = load_config(path);
  CHECK(c.name == "demo");
  CHECK(c.model.num_layers == 3);
  CHECK(c.model.model_dim == 32);
  CHECK(c.model.own.get<bool>("tied_blocks", false));  // a key of the model type
  CHECK(c.model.num_heads == 4);                       // default kept
  CHECK(c.model.attention.get<std::string>("feature_map", "") == "sikf");
  CHECK(c.model.positional.get_list<int64_t>("grid", {}) == std::vector<int64_t>{14, 14});
  CHECK(c.data.dir == "data/mnist");
  CHECK(c.data.own.get<int64_t>("image_pool", 1) == 2);
  CHECK(c.optimizer.get<double>("lr", 0) == 1e-3);
  CHECK(c.optimizer.get_list<double>("betas", {}) == std::vector<double>{0.9, 0.98});
  CHECK(c.train.epochs == 2);
  CHECK(c.train.clip_grad_norm == 1.5);
  CHECK(c.train.metric == "macro_f1");
  CHECK(c.train.out == "runs/demo");
  CHECK(c.seed == 7);
  // The resolved text parses back to the same configuration, name included.
  const RunConfig again = parse_config(c.yaml, "checkpoint");
  CHECK(again.name == "demo");
  CHECK(again.model.num_layers == 3);
  CHECK(again.yaml == c.yaml);
}

TEST_CASE("config: base composition merges mappings and the file's own keys win") {
  test::ScratchDir dir;
  dir.write("base.yaml", R"(
model: {num_layers: 4, model_dim: 64, attention: {type: softmax, dropout: 0.1}}
data: {dataset: listops, batch_size: 8}
optimizer: {type: lra_adam, lr: 0.05}
train: {steps: 100}
)");
  fs::create_directories(dir.path / "sub");
  const std::string child = dir.write("sub/child.yaml", R"(
base: ../base.yaml
model: {num_layers: 2, attention: {type: linear, feature_map: elu1}}
optimizer: {lr: 0.01}
)");
  const RunConfig c = load_config(child);
  CHECK(c.model.num_layers == 2);
  CHECK(c.model.model_dim == 64);
  CHECK(c.data.dataset == "listops");
  CHECK(c.optimizer.get<std::string>("type", "") == "lra_adam");
  CHECK(c.optimizer.get<double>("lr", 0) == 0.01);
  // attention is a mapping too: merged key by key, so the base's dropout stays.
  CHECK(c.model.attention.get<std::string>("type", "") == "linear");
  CHECK(c.model.attention.has("dropout"));
  CHECK(c.name == "child");
}

TEST_CASE("config: --set overrides scalars, lists and new keys") {
  test::ScratchDir dir;
  const std::string path = dir.write("run.yaml", test::kMinimalConfig);
  const RunConfig c = load_config(path, {"model.num_layers=5", "train.steps=3",
                                         "model.positional={type: fastrpb2d, grid: [7, 7]}",
                                         "model.positional.grid=[14,14]", "data.dir=/elsewhere"});
  CHECK(c.model.num_layers == 5);
  CHECK(c.train.steps == 3);
  CHECK(c.model.positional.get_list<int64_t>("grid", {}) == std::vector<int64_t>{14, 14});
  CHECK(c.data.dir == "/elsewhere");
  CHECK(c.yaml.find("num_layers: 5") != std::string::npos);
}

TEST_CASE("config: every user error names the key path and what is valid") {
  test::ScratchDir dir;
  const std::string good = dir.write("good.yaml", test::kMinimalConfig);

  SUBCASE("unknown key in a section") {
    const std::string e = load_error(good, {"model.num_layer=2"});
    CHECK(e.find("unknown key 'model.num_layer'") != std::string::npos);
    CHECK(e.find("valid keys of 'model'") != std::string::npos);
    CHECK(e.find("num_layers") != std::string::npos);
  }
  SUBCASE("data: the dataset reads its own keys; a key it does not read lists the valid ones") {
    const std::string e = load_error(good, {"data.image_pool=2", "data.dataset=listops"});
    CHECK(e.find("[config] unknown key 'data.image_pool'; valid keys of 'data': ") == 0);
    CHECK(e.find("batch_size") != std::string::npos);
    CHECK(e.find("tokenizer") != std::string::npos);  // listops's own key
    CHECK(load_error(good, {"data.dataset=mnsit"})
              .find("[config] unknown dataset 'mnsit'; known: ") == 0);
    CHECK(load_error(good, {"data.dataset="}).find("[config] data.dataset is required (aan, ") ==
          0);
  }
  SUBCASE("base must name files") {
    const std::string mapped = dir.write("mapped.yaml", "base: {a: 1}\n");
    CHECK(load_error(mapped, {}) ==
          "[config] '" + mapped +
              "' line 1: base must be a file name or a list of file names, got a mapping");
  }
  SUBCASE("unknown top-level key") {
    const std::string e = load_error(good, {"trian.steps=2"});
    CHECK(e.find("unknown key 'trian'") != std::string::npos);
    CHECK(e.find("train") != std::string::npos);
  }
  SUBCASE("wrong type") {
    CHECK(load_error(good, {"model.num_layers=many"}) ==
          "[config] model.num_layers: expected an integer, got 'many'");
    // The model type's own keys are read by the type (Options): "[model] option ...".
    CHECK(load_error(good, {"model.tied_blocks=maybe"}) ==
          "[model] option 'tied_blocks' must be true or false, got 'maybe'");
    CHECK(load_error(good, {"model.num_layers=[1, 2]"}) ==
          "[config] model.num_layers: expected an integer, got a list");
    CHECK(load_error(good, {"model=3"}) == "[config] 'model' must be a mapping, got '3'");
    CHECK(load_error(good, {"train=[1]"}) == "[config] 'train' must be a mapping, got a list");
    // A block mapping's one key without the space after its colon is a scalar.
    CHECK(load_error(dir.write("block.yaml", "model:\n  num_layers:4\n")) ==
          "[config] 'model' must be a mapping, got 'num_layers:4' (YAML needs a space after a "
          "key's colon: 'num_layers: 4', not 'num_layers:4')");
    const std::string grid = "model.positions=learned2d";
    CHECK(load_error(good, {grid, "model.position_grid={a: 1}"}) ==
          "[config] model.position_grid: nested mappings are not options");
    CHECK(load_error(good, {grid, "model.position_grid=[14, x]"}) ==
          "[model] option 'position_grid' must be an integer, got 'x'");
    CHECK(load_error(good, {grid, "model.position_grid=[[14], 14]"}) ==
          "[config] model.position_grid: list items must be scalars");
    CHECK(load_error(good, {"model.position_grid=[14, 14]"}) ==
          "[model] position_grid is read by positions 'learned2d' only, got positions 'learned'");
  }
  SUBCASE("an image model's keys") {
    const RunConfig c =
        load_config(good, {"model.input=patches", "model.patch_size=5", "model.patch_stride=4",
                           "model.positions=learned2d", "model.position_grid=[7, 7]"});
    const ClassifierConfig k = ClassifierConfig::read(c.model);
    CHECK(k.input == "patches");
    CHECK(k.patch_size == 5);
    CHECK(k.patch_stride == 4);
    CHECK(k.position_grid == std::vector<int64_t>{7, 7});
  }
  SUBCASE("missing file, also as a base") {
    CHECK(load_error((dir.path / "nope.yaml").string()) ==
          "[config] cannot read '" + (dir.path / "nope.yaml").string() + "': no such file");
    const std::string child = dir.write("child.yaml", "base: missing_base.yaml\n");
    CHECK(load_error(child).find("missing_base.yaml': no such file") != std::string::npos);
  }
  SUBCASE("bad override") {
    CHECK(load_error(good, {"model.num_layers"}) ==
          "[config] override 'model.num_layers' must look like key.path=value");
    CHECK(load_error(good, {"=3"}) == "[config] override '=3' must look like key.path=value");
    CHECK(load_error(good, {"model..x=3"}).find("empty key") != std::string::npos);
    CHECK(load_error(good, {"model.num_layers.x=3"}) ==
          "[config] override 'model.num_layers.x=3': 'num_layers' is not a mapping");
  }
  SUBCASE("YAML syntax error with its line") {
    const std::string bad = dir.write("bad.yaml", "model: {num_layers: 1\ndata: [\n");
    CHECK(load_error(bad).find("bad.yaml' line") != std::string::npos);
  }
  SUBCASE("include cycle") {
    const std::string a = dir.write("a.yaml", "base: b.yaml\n");
    dir.write("b.yaml", "base: a.yaml\n");
    CHECK(load_error(a).find("includes itself") != std::string::npos);
  }
  SUBCASE("values checked where they are read") {
    CHECK(
        load_error(good, {"train.epochs=2"}).find("exactly one of train.steps and train.epochs") !=
        std::string::npos);
    CHECK(load_error(good, {"train.metric=f2"}) ==
          "[config] train.metric must be accuracy, macro_f1 or loss (classification), bpc, loss or "
          "perplexity (language modelling), got 'f2'");
    CHECK(load_error(good, {"device=tpu"}) == "[config] device must be cpu or cuda, got 'tpu'");
    // One key per message, with its value (eval_batch_size -1 was reported as "data.batch_size
    // must be positive, got 32").
    const std::pair<const char*, const char*> bounds[] = {
        {"data.eval_batch_size=-1", "data.eval_batch_size (0: batch_size) must be >= 0, got -1"},
        {"data.batch_size=0", "data.batch_size must be >= 1, got 0"},
        {"data.prefetch=-2", "data.prefetch must be >= 0, got -2"},
        {"data.eval_limit=-1", "data.eval_limit must be >= 0, got -1"},
        {"train.log_every=0", "train.log_every must be >= 1, got 0"},
        {"train.accumulate=0", "train.accumulate must be >= 1, got 0"},
        {"train.clip_grad_norm=-1", "train.clip_grad_norm (0: off) must be >= 0, got -1"},
        // No number in a config is inf or nan, in either spelling (an inf init std or eps passed
        // every ">= 0" check and made the first loss NaN, far from its key).
        {"train.clip_grad_norm=nan", "train.clip_grad_norm: expected a finite number, got 'nan'"},
        {"train.clip_grad_norm=.inf", "train.clip_grad_norm: expected a finite number, got '.inf'"},
        {"model.dropout=-inf", "model.dropout: expected a finite number, got '-inf'"},
        // train.epochs -1 beside train.steps was taken, and written into config.yaml.
        {"train.epochs=-1", "train.epochs must be >= 0, got -1"},
        {"train.steps=-1", "train.steps must be >= 0, got -1"},
        // name is the folder under runs/: `..` wrote the run into the working folder.
        {"name=..",
         "name '..' must be one folder name (no '/' or control characters, not '.' or '..'): it "
         "names the run's folder runs/NAME; train.out puts a run anywhere"},
        {"name=../../x",
         "name '../../x' must be one folder name (no '/' or control characters, not '.' or "
         "'..'): it names the run's folder runs/NAME; train.out puts a run anywhere"},
        // A newline made a folder name of two lines and split the run's result line (now
        // refused as any control byte in a value; a file stem with one meets the name's check).
        {"name=\"a\\nb\"",
         "override 'name=\"a\\nb\"' line 1: a key or value holds the control byte 0x0a; settings "
         "are printable text"},
        // Invalid UTF-8 was written raw to config.yaml and as U+FFFD to summary.json.
        {"name=a\xff"
         "b",
         "name is not UTF-8 text: invalid UTF-8 byte at index 1: 0xFF"},
        {"eval.tgt_len=0", "eval.tgt_len must be >= 1, got 0"},
        {"eval.mem_len=-1", "eval.mem_len must be >= 0, got -1"}};
    for (const auto& bound : bounds) {  // no structured binding: clang 14 cannot capture one
      CAPTURE(bound.first);
      CHECK(load_error(good, {bound.first}) == std::string("[config] ") + bound.second);
    }
    CHECK(load_error(good, {"data.image_pool=3"}).find("must divide 28") != std::string::npos);
    CHECK(load_error(good, {"optimizer={lr: 1}"}).find("optimizer.type is required") !=
          std::string::npos);
    CHECK(load_error(good, {"model.attention=[1, 2]"}).find("expected a mapping") !=
          std::string::npos);
  }
  SUBCASE("the optimizer and the schedule check their own keys at load") {
    CHECK(load_error(good, {"optimizer={type: adamw, lr: 1e-3, betas: [0.9, 1.5]}"}) ==
          "[optimizer] betas must lie in [0, 1), got 1.5");
    CHECK(load_error(good, {"optimizer={type: adamw, momentum: 0.9}"})
              .find("unknown option 'momentum'") != std::string::npos);
    CHECK(load_error(good, {"optimizer={type: rmsprop}"}).find("rmsprop") != std::string::npos);
    const std::pair<const char*, const char*> refusals[] = {
        {"optimizer={type: adamw, weight_decay: inf}",
         "[optimizer] option 'weight_decay' must be a finite number, got 'inf'"},
        {"optimizer={type: adamw, weight_decay: -1}",
         "[optimizer] weight_decay must be finite and >= 0, got -1"},
        // cycles inf made the cosine NaN, clamped to a learning rate of 0 for the whole run.
        {"schedule={type: cosine, cycles: inf}",
         "[schedule] option 'cycles' must be a finite number, got 'inf'"},
        // eps 0 trained into a NaN loss: a parameter without gradient updated by 0 / 0.
        {"optimizer={type: adamw, eps: 0}",
         "[optimizer] eps must be finite and > 0, got 0 (with 0, a parameter whose gradient is 0 "
         "would be updated by 0 / 0)"},
        {"optimizer={type: sgd, lr: 0.1, momentum: nan}",
         "[optimizer] option 'momentum' must be a finite number, got 'nan'"},
        // A running average's coefficients: dampening 2 entered the gradient negated, momentum
        // 1e30 diverged at step 3.
        {"optimizer={type: sgd, lr: 0.1, momentum: 1}",
         "[optimizer] momentum must lie in [0, 1), got 1"},
        {"optimizer={type: sgd, lr: 0.1, momentum: -0.5}",
         "[optimizer] momentum must lie in [0, 1), got -0.5"},
        {"optimizer={type: sgd, lr: 0.1, momentum: 0.9, dampening: 2}",
         "[optimizer] dampening must lie in [0, 1], got 2"}};
    for (const auto& refusal : refusals) {  // no structured binding: clang 14 cannot capture one
      CAPTURE(refusal.first);
      CHECK(load_error(good, {refusal.first}) == refusal.second);
    }
    // null is no value in a component's mapping too, as `model.mem_len: null` (it was "nested
    // mappings are not options"): the component's default, written into the resolved text (the
    // value removed, or a key the component reads with none to remove).
    const RunConfig nulled = load_config(
        good, {"optimizer.weight_decay=null", "schedule={type: cosine}", "schedule.cycles="});
    CHECK(nulled.yaml.find("  weight_decay: 0.01\n") != std::string::npos);
    CHECK(
        load_error(good, {"schedule={type: cosine, warmup: 10}"}).find("unknown option 'warmup'") !=
        std::string::npos);
    CHECK(load_error(good, {"schedule={type: linear_decay, warmup_steps: 500}"})
              .find("warmup_steps (500) must be below total_steps (") != std::string::npos);
    // A total_steps below the run's is refused by the trainer (test_schedules.cpp,
    // test_bad_input.sh), not at load: eval reads the configuration of a run that is over.
    CHECK_NOTHROW(load_config(good, {"schedule={type: linear_decay, total_steps: 5}"}));
  }
}

TEST_CASE("config: the resolved text holds every default, and a key left out means its default") {
  test::ScratchDir dir;
  const RunConfig c = load_config(dir.write("minimal.yaml", test::kMinimalConfig));
  // The trunk's, the model type's and the dataset's defaults, the schedule a file without one
  // gets, the optimizer's and the trainer's.
  for (const char* line :
       {"attention_dropout: 0.1", "num_heads: 4", "activation: gelu", "norm: pre", "pooling: cls",
        "val_fraction: 0.1", "type: constant", "weight_decay: 0.01", "eps: 1e-08", "log_every: 50",
        "dir: data/mnist", "out: runs/minimal", "detect_anomaly: false"})
    CHECK_MESSAGE(c.yaml.find(line) != std::string::npos, line << " missing from:\n" << c.yaml);
  CHECK(c.defaults.at("model.attention_dropout") == "0.1");
  CHECK(c.defaults.at("train.steps") == "0");
  CHECK(c.defaults.at("model.norm") == "pre");  // the model type's default
  const RunConfig again = parse_config(c.yaml, "config.yaml");
  CHECK(again.yaml == c.yaml);
  CHECK(trajectory_changes(test::kMinimalConfig, c.yaml, c.defaults).empty());
  // A key the older text leaves out is compared by its default.
  const RunConfig changed = parse_config(test::kMinimalConfig, "minimal",
                                         {"model.attention_dropout=0", "train.log_every=7"});
  CHECK(trajectory_changes(test::kMinimalConfig, changed.yaml, changed.defaults) ==
        std::vector<std::string>{"model.attention_dropout: 0.1 -> 0"});
  // config_changes keeps the keys trajectory_changes leaves out (eval and generate read them).
  const std::vector<ConfigChange> all =
      config_changes(test::kMinimalConfig, changed.yaml, changed.defaults);
  REQUIRE(all.size() == 2);
  CHECK(all[0].key == "model.attention_dropout");
  CHECK(all[0].before == "0.1");
  CHECK(all[0].after == "0");
  CHECK(all[1].key == "train.log_every");
  CHECK(all[1].before == "50");
  CHECK(all[1].after == "7");
  // An eval.* key decides the validation figures, so the best weights and early stopping.
  const RunConfig eval_changed =
      parse_config(test::kMinimalConfig, "minimal", {"eval.max_batches=3"});
  CHECK(trajectory_changes(test::kMinimalConfig, eval_changed.yaml, eval_changed.defaults) ==
        std::vector<std::string>{"eval.max_batches: 0 -> 3"});
  // Without the defaults, a key only one side has is a change from or to <none>.
  CHECK(trajectory_changes("train: {steps: 10}", "train: {steps: 10, patience: 0}") ==
        std::vector<std::string>{"train.patience: <none> -> 0"});
}

TEST_CASE("config: `attention: softmax` is the mapping {type: softmax}, written out") {
  const std::string text = std::string(test::kMinimalConfig) + "schedule: constant\n";
  const RunConfig c = parse_config(text, "short", {"model.attention=softmax"});
  CHECK(c.model.attention.get<std::string>("type", "") == "softmax");
  CHECK(c.yaml.find("  attention:\n    type: softmax\n") != std::string::npos);
  CHECK(c.yaml.find("schedule:\n  type: constant\n") != std::string::npos);
  const std::string short_form = R"(
model: {num_layers: 1, attention: softmax}
data: {dataset: mnist}
optimizer: {type: adamw, lr: 1.0e-3}
schedule: constant
train: {steps: 10}
)";
  CHECK(trajectory_changes(short_form, c.yaml, c.defaults).empty());
  const RunConfig linear = parse_config(short_form, "short", {"model.attention=linear"});
  CHECK(trajectory_changes(short_form, linear.yaml, linear.defaults) ==
        std::vector<std::string>{"model.attention.type: softmax -> linear"});
}
