// The golden test of the language-model half: a tiny MemTransformerLM trained by the reference
// Transformer-XL (tests/data/txl_reference_tiny.{h5,json}, made by the original implementation),
// imported as a relpos checkpoint and evaluated in the reference's layout, reproduces the four
// bits-per-character the reference's own evaluation reported (memory 16, none, 64, same_length);
// exported again, it is the same tensors and settings.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/json.h"
#include "datasets/hdf5_handle.h"
#include "tests/harness.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/module_state.h"
#include "train/reference_txl.h"
#include "train/task.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(RELPOS_SOURCE_DIR) / "tests/data";
// The text the fixture was trained and evaluated on (Debian's base-files).
const char* const kText = "/usr/share/common-licenses/GPL-3";

std::string bytes_of(const std::string& path, size_t from, size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.substr(from, count);
}

// A copy of the fixture's state at `path` with dataset `name` written anew: f32 `shape`, every
// value `value`.
void write_state_with(const std::string& path, const std::string& name,
                      const std::vector<hsize_t>& shape, float value) {
  fs::copy_file(kData / "txl_reference_tiny.h5", path, fs::copy_options::overwrite_existing);
  const H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  REQUIRE(H5Ldelete(file.get(), name.c_str(), H5P_DEFAULT) >= 0);
  const H5Handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr),
                       H5Sclose);
  const H5Handle set(H5Dcreate2(file.get(), name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
                     H5Dclose);
  hsize_t count = 1;
  for (const hsize_t n : shape) count *= n;
  const std::vector<float> values(count, value);
  REQUIRE(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
}

}  // namespace

TEST_CASE("import reference: the reference's four bpc, to 1e-6, in its layout at batch 10") {
  const Json h = read_json_file("test", (kData / "txl_reference_tiny.json").string());
  const Json& expected = h.at("expected");
  REQUIRE_MESSAGE(fs::exists(kText), kText << " (base-files) is the fixture's text");
  REQUIRE(fs::file_size(kText) == expected.at("text_bytes").get<size_t>());
  test::ScratchDir dir;
  const auto offset = expected.at("valid_offset").get<size_t>();
  const auto length = expected.at("valid_length").get<size_t>();
  fs::create_directories(dir.path / "gpl");
  dir.write("gpl/train.txt", bytes_of(kText, 0, offset));
  dir.write("gpl/valid.txt", bytes_of(kText, offset, length));
  dir.write("gpl/test.txt", bytes_of(kText, offset, length));
  ReferenceImport request{(kData / "txl_reference_tiny.h5").string(),
                          (kData / "txl_reference_tiny.json").string(), dir.file("ref.h5"),
                          dir.file("gpl")};
  import_reference(request);
  const CheckpointData data = read_checkpoint(request.out);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"valid_bpc", ""},
      {"valid_bpc_mem0", "eval.mem_len=0"},
      {"valid_bpc_mem64", "eval.mem_len=64"},
      {"valid_bpc_same_length", "eval.same_length=true"}};
  for (const auto& setting : cases) {
    const std::string& key = setting.first;
    const std::string& change = setting.second;
    CAPTURE(key);
    std::vector<std::string> overrides;
    if (!change.empty()) overrides.push_back(change);
    const RunConfig config = parse_config(data.texts.at("config"), request.out, overrides);
    const std::unique_ptr<Task> task = make_task(config, Device::cpu(), {"val"});
    task->check_checkpoint(data, request.out);
    restore_module(task->model(), data);
    const Metrics m = task->evaluate("val", 0);
    CHECK(m.count == 10 * (static_cast<int64_t>(length) / 10 - 1));  // the reference's targets
    const double bpc = m.get("bpc");
    CHECK(std::abs(bpc - expected.at(key).get<double>()) < 1e-6);
    MESSAGE(key << ": relpos " << bpc << ", reference " << expected.at(key).get<double>());
  }
}

TEST_CASE("export reference: the imported fixture goes back to the same tensors and settings") {
  test::ScratchDir dir;
  const std::string state = (kData / "txl_reference_tiny.h5").string();
  const std::string hparams = (kData / "txl_reference_tiny.json").string();
  import_reference({state, hparams, dir.file("ref.h5"), dir.file("gpl")});
  export_reference(dir.file("ref.h5"), dir.file("back.h5"), dir.file("back.json"));
  const Json original = read_json_file("test", hparams);
  const Json back = read_json_file("test", dir.file("back.json"));
  for (const auto& item : original.items()) {
    const std::string key = item.key();
    if (key == "train" || key == "expected" || key == "upstream_commit" || key == "provenance")
      continue;
    CAPTURE(key);
    REQUIRE(back.contains(key));
    CHECK(back.at(key) == item.value());
  }
  import_reference(
      {dir.file("back.h5"), dir.file("back.json"), dir.file("again.h5"), dir.file("gpl")});
  const CheckpointData a = read_checkpoint(dir.file("ref.h5"));
  const CheckpointData b = read_checkpoint(dir.file("again.h5"));
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    CAPTURE(a.params[i].first);
    CHECK(a.params[i].first == b.params[i].first);
    CHECK(a.params[i].second.to_vector<float>() == b.params[i].second.to_vector<float>());
  }
  // A classifier has no MemTransformerLM form.
  CHECK(test::error_of([&] {
          export_reference(
              (fs::path(RELPOS_SOURCE_DIR) / "tests/train/fixtures/resume_at_5.h5").string(),
              dir.file("x.h5"), dir.file("x.json"));
        }).find("is a sequence_classifier") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("x.h5")));
}

TEST_CASE(
    "import and export reference: output folders are made; a path that cannot be is refused") {
  test::ScratchDir dir;
  const std::string state = (kData / "txl_reference_tiny.h5").string();
  const std::string hparams = (kData / "txl_reference_tiny.json").string();
  import_reference({state, hparams, dir.file("made/by/import.h5"), dir.file("gpl")});
  CHECK(fs::is_regular_file(dir.file("made/by/import.h5")));
  export_reference(dir.file("made/by/import.h5"), dir.file("state/of/it.h5"),
                   dir.file("json/of/it.json"));
  CHECK(fs::is_regular_file(dir.file("state/of/it.h5")));
  CHECK(fs::is_regular_file(dir.file("json/of/it.json")));
  // A regular file on the way is refused first: before the checkpoint is read (it does not
  // exist here), and nothing is written, the other output included.
  dir.write("file", "x");
  const std::string under_file = dir.file("file/sub/out.h5");
  CHECK(test::error_of([&] {
          import_reference({state, hparams, under_file, dir.file("gpl")});
        }) == fmt::format("[import] cannot create the folder '{}': Not a directory",
                          dir.file("file/sub")));
  CHECK(test::error_of([&] {
          export_reference(dir.file("missing.h5"), dir.file("fresh.h5"), under_file);
        }) == fmt::format("[export] cannot create the folder '{}': Not a directory",
                          dir.file("file/sub")));
  CHECK_FALSE(fs::exists(dir.file("fresh.h5")));
}

TEST_CASE("import reference: a state that does not fit is refused, naming the file and key") {
  test::ScratchDir dir;
  Json h = read_json_file("test", (kData / "txl_reference_tiny.json").string());
  h["d_inner"] = 48;
  const std::string hparams = dir.write("h.json", h.dump());
  const std::string error = test::error_of([&] {
    import_reference(
        {(kData / "txl_reference_tiny.h5").string(), hparams, dir.file("x.h5"), dir.file("gpl")});
  });
  CHECK(error == fmt::format("[import] '{}': 'layers.0.pos_ff.CoreNet.0.weight' has shape [64, "
                             "32], where d_inner and d_model in '{}' give [48, 32]",
                             (kData / "txl_reference_tiny.h5").string(), hparams));
  // Sizes that disagree with the state are refused before a model is built from them: an
  // n_layer of 10^12 was built until the machine ran out of memory.
  h["d_inner"] = 64;
  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, int64_t, std::string>>{
           {"n_layer", 1000000000000, "n_layer 1000000000000, but '"},
           {"d_model", 1000000000, "'word_emb.emb_layers.0.weight' has shape"},
           {"n_head", 3, "'layers.0.dec_attn.qkv_net.weight' has shape"}}) {
    RELPOS_INFO("{}", key);
    Json wrong = h;
    wrong[key] = value;
    const std::string path = dir.write(key + ".json", wrong.dump());
    CHECK(test::error_of([&] {
            import_reference({(kData / "txl_reference_tiny.h5").string(), path, dir.file("x.h5"),
                              dir.file("gpl")});
          }).find(want) != std::string::npos);
  }
  h.erase("n_head");
  const std::string no_heads = dir.write("h2.json", h.dump());
  CHECK(test::error_of([&] {
          import_reference({(kData / "txl_reference_tiny.h5").string(), no_heads, dir.file("x.h5"),
                            dir.file("gpl")});
        }).find("has no 'n_head'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("x.h5")));
}

TEST_CASE("import reference: hyper-parameters are integers in range and bytes have one id") {
  test::ScratchDir dir;
  const std::string state = (kData / "txl_reference_tiny.h5").string();
  const Json h = read_json_file("test", (kData / "txl_reference_tiny.json").string());
  // A fraction was cut (d_model 32.5 read as 32), a number past int64 wrapped (n_head 2^64 - 1
  // gave a qkv_net of -3 rows), ext_len was ignored, a byte with two ids was accepted.
  Json symbols = h.at("symbols");
  symbols[1] = symbols[0];
  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, Json, std::string>>{
           {"d_model", 32.5, "'d_model' must be an integer, got 32.5"},
           {"clamp_len", 1.5, "'clamp_len' must be an integer, got 1.5"},
           {"n_head", 18446744073709551615u,
            "'n_head' must be in [1, 2^40], got 18446744073709551615"},
           {"n_layer", 0, "'n_layer' must be in [1, 2^40], got 0"},
           {"mem_len", -1, "'mem_len' must be in [0, 2^40], got -1"},
           {"tgt_len", "16", "'tgt_len' must be an integer, got \"16\""},
           {"ext_len", 8,
            "ext_len must be 0 (relpos's transformer_xl has no extended context), "
            "got 8"},
           {"dropout", 1.0, "'dropout' must be in [0, 1), got 1"},
           {"symbols", symbols,
            fmt::format("symbol {} is token 0 and token 1 (a byte has one id)",
                        symbols[0].get<int64_t>())}}) {
    RELPOS_INFO("{} = {}", key, value.dump());
    Json wrong = h;
    wrong[key] = value;
    const std::string path = dir.write(key + ".json", wrong.dump());
    CHECK(test::error_of([&] {
            import_reference({state, path, dir.file("x.h5"), dir.file("gpl")});
          }) == fmt::format("[import] '{}': {}", path, want));
  }
  CHECK_FALSE(fs::exists(dir.file("x.h5")));
}

TEST_CASE("import reference: a state tensor of the wrong shape or not finite is named") {
  test::ScratchDir dir;
  const std::string hparams = (kData / "txl_reference_tiny.json").string();
  const std::string state = dir.file("state.h5");
  // These reached relpos's checkpoint loader, which named relpos's parameter and blamed a
  // diverged training run.
  write_state_with(state, "layers.0.pos_ff.CoreNet.0.bias", {3, 64}, 0.5f);
  CHECK(test::error_of([&] {
          import_reference({state, hparams, dir.file("x.h5"), dir.file("gpl")});
        }) == fmt::format("[import] '{}': 'layers.0.pos_ff.CoreNet.0.bias' has shape [3, 64], "
                          "where relpos's 'layers.0.mlp.fc1.bias' needs [64]",
                          state));
  write_state_with(state, "layers.0.pos_ff.CoreNet.0.bias", {64}, NAN);
  CHECK(test::error_of([&] {
          import_reference({state, hparams, dir.file("x.h5"), dir.file("gpl")});
        }) == fmt::format("[import] '{}': 'layers.0.pos_ff.CoreNet.0.bias' holds NaN or Inf values",
                          state));
  // A tied output weight of another shape was compared by broadcasting.
  write_state_with(state, "crit.out_layers.0.weight", {1, 1, 1}, 0.0f);
  CHECK(test::error_of([&] {
          import_reference({state, hparams, dir.file("x.h5"), dir.file("gpl")});
        }).find("'crit.out_layers.0.weight' has no place") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("x.h5")));
}
