// Importing a reference Transformer-XL (train/reference_import.h): its state_dict read from HDF5,
// renamed and split into relpos's parameters, written as a relpos checkpoint with the
// configuration its hyper-parameters give and its vocabulary.
#include "train/reference_import.h"

#include <hdf5.h>

#include <filesystem>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "core/ops.h"
#include "layers/models/model.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/module_state.h"
#include "train/task.h"

namespace relpos {
namespace {

constexpr const char* kWho = "import";

// An HDF5 id closed when it goes out of scope.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

// Every dataset at the root of an HDF5 file, read as f32 (the reference trains in f32).
std::map<std::string, Tensor> read_root_datasets(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  RELPOS_CHECK(file.id >= 0, kWho, "'{}' is not a readable HDF5 file", path);
  std::vector<std::string> names;
  H5Literate(
      file.id, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  std::map<std::string, Tensor> out;
  for (const std::string& name : names) {
    const Handle set{H5Dopen2(file.id, name.c_str(), H5P_DEFAULT), H5Dclose};
    RELPOS_CHECK(set.id >= 0, kWho, "'{}': '{}' is not a dataset (one per state_dict key)", path,
                 name);
    const Handle type{H5Dget_type(set.id), H5Tclose};
    RELPOS_CHECK(H5Tget_class(type.id) == H5T_FLOAT, kWho,
                 "'{}': '{}' is not a floating-point tensor", path, name);
    const Handle space{H5Dget_space(set.id), H5Sclose};
    const int rank = H5Sget_simple_extent_ndims(space.id);
    RELPOS_CHECK(rank >= 0 && rank <= 8, kWho, "'{}': '{}' has no readable shape", path, name);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
    Tensor t = Tensor::empty(Shape(dims.begin(), dims.end()), DType::f32);
    RELPOS_CHECK(
        H5Dread(set.id, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) >= 0, kWho,
        "'{}': cannot read '{}'", path, name);
    out.emplace(name, t);
  }
  return out;
}

// A key of the hyper-parameters as T; errors name the file and the key.
template <typename T>
T hparam(const Json& h, const std::string& path, const char* key) {
  RELPOS_CHECK(h.contains(key), kWho, "'{}' has no '{}'", path, key);
  try {
    return h.at(key).get<T>();
  } catch (const Json::exception&) {
    fail(kWho, "'{}': '{}' must be {}, got {}", path, key,
         std::is_same_v<T, bool> ? "true or false" : "a number", h.at(key).dump());
  }
}

// The relpos configuration of the reference model: transformer_xl with its sizes, evaluated in
// the reference's layout.
std::string config_text(const Json& h, const ReferenceImport& r) {
  const std::string& p = r.hparams;
  const int64_t heads = hparam<int64_t>(h, p, "n_head");
  return fmt::format(
      "name: {}\n"
      "model:\n  type: transformer_xl\n  num_layers: {}\n  num_heads: {}\n  model_dim: {}\n"
      "  qkv_dim: {}\n  mlp_dim: {}\n  dropout: {}\n  attention_dropout: {}\n  norm: {}\n"
      "  vocab_size: {}\n  mem_len: {}\n  clamp_len: {}\n  same_length: {}\n"
      "  tie_weights: {}\n"
      "data: {{dataset: chars, dir: '{}', vocabulary: all, tgt_len: {}, batch_size: {}}}\n"
      "optimizer: {{type: adam}}\ntrain: {{steps: 1}}\neval: {{layout: reference}}\n",
      std::filesystem::path(r.out).stem().string(), hparam<int64_t>(h, p, "n_layer"), heads,
      hparam<int64_t>(h, p, "d_model"), heads * hparam<int64_t>(h, p, "d_head"),
      hparam<int64_t>(h, p, "d_inner"), hparam<double>(h, p, "dropout"),
      hparam<double>(h, p, "dropatt"), hparam<bool>(h, p, "pre_lnorm") ? "pre" : "post",
      hparam<int64_t>(h, p, "n_token"), hparam<int64_t>(h, p, "mem_len"),
      std::max<int64_t>(0, hparam<int64_t>(h, p, "clamp_len")),  // -1 and 0: no clamp
      hparam<bool>(h, p, "same_length") ? "true" : "false",
      hparam<bool>(h, p, "tie_weight") ? "true" : "false", r.data_dir,
      hparam<int64_t>(h, p, "tgt_len"),
      h.contains("eval_batch_size") ? hparam<int64_t>(h, p, "eval_batch_size") : 10);
}

// The reference's name of a relpos parameter (docs/language-models.md), and which third of
// qkv_net it is (-1: the whole tensor).
std::pair<std::string, int> reference_name(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> renames = {
      {"attn.out_proj.weight", "dec_attn.o_net.weight"},
      {"attn.attention.r_net.weight", "dec_attn.r_net.weight"},
      {"ln1.weight", "dec_attn.layer_norm.weight"},
      {"ln1.bias", "dec_attn.layer_norm.bias"},
      {"mlp.fc1.weight", "pos_ff.CoreNet.0.weight"},
      {"mlp.fc1.bias", "pos_ff.CoreNet.0.bias"},
      {"mlp.fc2.weight", "pos_ff.CoreNet.3.weight"},
      {"mlp.fc2.bias", "pos_ff.CoreNet.3.bias"},
      {"ln2.weight", "pos_ff.layer_norm.weight"},
      {"ln2.bias", "pos_ff.layer_norm.bias"}};
  if (name == "embedding.weight") return {"word_emb.emb_layers.0.weight", -1};
  if (name == "output.bias") return {"crit.out_layers.0.bias", -1};
  if (name == "r_w_bias" || name == "r_r_bias") return {name, -1};
  const size_t dot = name.find('.', std::string("layers.").size());
  if (name.rfind("layers.", 0) != 0 || dot == std::string::npos) return {"", -1};
  const std::string layer = name.substr(0, dot + 1), rest = name.substr(dot + 1);
  const char* thirds[] = {"attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"};
  for (int i = 0; i < 3; ++i)
    if (rest == thirds[i]) return {layer + "dec_attn.qkv_net.weight", i};
  for (const auto& [ours, theirs] : renames)
    if (rest == ours) return {layer + theirs, -1};
  return {"", -1};
}

}  // namespace

void import_reference(const ReferenceImport& r) {
  const Json h = read_json_file(kWho, r.hparams);
  std::map<std::string, Tensor> state = read_root_datasets(r.state);
  RunConfig config = parse_config(config_text(h, r), r.hparams);
  ModelConfig model_config = config.model;
  const auto symbols = hparam<std::vector<int64_t>>(h, r.hparams, "symbols");
  RELPOS_CHECK(static_cast<int64_t>(symbols.size()) == model_config.vocab_size, kWho,
               "'{}': {} symbols for n_token {}", r.hparams, symbols.size(),
               model_config.vocab_size);
  complete_model_config(model_config, config, model_config.vocab_size, 0);
  Generator gen(config.seed);
  const std::shared_ptr<LanguageModel> model = make_language_model(model_config, gen);
  complete_config(config);

  CheckpointData data = capture_state(*model, nullptr);
  std::map<std::string, bool> used;
  for (auto& [name, value] : data.params) {
    const auto [theirs, third] = reference_name(name);
    RELPOS_CHECK(state.count(theirs), kWho, "'{}' has no tensor for relpos's '{}' (expected '{}')",
                 r.state, name, theirs.empty() ? "a MemTransformerLM key" : theirs);
    const Tensor& t = state.at(theirs);
    value =
        third < 0 ? t : t.slice(0, third * t.size(0) / 3, (third + 1) * t.size(0) / 3).contiguous();
    used[theirs] = true;
  }
  // The tied output weight is the embedding; the sinusoid's frequencies are computed.
  for (const auto& [name, t] : state) {
    if (used.count(name) || name == "pos_emb.inv_freq") continue;
    RELPOS_CHECK(name == "crit.out_layers.0.weight" &&
                     max(abs(sub(t, state.at("word_emb.emb_layers.0.weight")))).item() == 0,
                 kWho, "'{}': '{}' has no place in relpos's transformer_xl{}", r.state, name,
                 name == "crit.out_layers.0.weight" ? " (the output weight is tied: it must equal "
                                                      "the embedding)"
                                                    : "");
  }
  restore_module(*model, data);  // shapes checked, each named
  CheckpointData out = capture_state(*model, nullptr);
  out.texts["config"] = config.yaml;
  std::vector<uint8_t> bytes;
  for (const int64_t s : symbols) {
    RELPOS_CHECK(s >= 0 && s < 256, kWho, "'{}': symbol {} is not a byte", r.hparams, s);
    bytes.push_back(static_cast<uint8_t>(s));
  }
  out.state.emplace_back("vocabulary",
                         Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}));
  out.ints["step"] = 0;
  write_checkpoint(r.out, out);
}

}  // namespace relpos
