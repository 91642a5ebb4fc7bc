// Importing a reference Transformer-XL (train/reference_txl.h): its state_dict read from HDF5,
// renamed and split into relpos's parameters, written as a relpos checkpoint with the
// configuration its hyper-parameters give and its vocabulary.
#include "train/reference_txl.h"

#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/file_write.h"
#include "core/filesystem_error.h"
#include "core/json.h"
#include "core/ops.h"
#include "core/shape.h"
#include "datasets/hdf5_handle.h"
#include "layers/models/model.h"
#include "train/checkpoint.h"
#include "train/checkpoint_contents.h"
#include "train/config.h"
#include "train/module_state.h"
#include "train/root_datasets.h"
#include "train/task.h"

namespace relpos {
namespace {

constexpr const char* kWho = "import";
constexpr const char* kExport = "export";

// Every dataset at the root of an HDF5 file, read as f32 (the reference trains in f32).
std::map<std::string, Tensor> read_root_datasets(const std::string& path) {
  std::error_code error;  // a FIFO would block H5Fopen; a missing file is named as such
  const auto status = std::filesystem::status(path, error);
  RELPOS_CHECK(std::filesystem::exists(status), kWho, "'{}': {}", path, why_missing(error));
  RELPOS_CHECK(std::filesystem::is_regular_file(status), kWho, "'{}' is not a regular file", path);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const H5Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  RELPOS_CHECK(file.get() >= 0, kWho, "'{}' is not a readable HDF5 file", path);
  std::vector<std::string> names;
  H5Literate(
      file.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  std::map<std::string, Tensor> out;
  for (const std::string& name : names) {
    const H5Handle set{H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose};
    RELPOS_CHECK(set.get() >= 0, kWho, "'{}': '{}' is not a dataset (one per state_dict key)", path,
                 name);
    const H5Handle type{H5Dget_type(set.get()), H5Tclose};
    RELPOS_CHECK(H5Tget_class(type.get()) == H5T_FLOAT, kWho,
                 "'{}': '{}' is not a floating-point tensor", path, name);
    const H5Handle space{H5Dget_space(set.get()), H5Sclose};
    const int rank = H5Sget_simple_extent_ndims(space.get());
    RELPOS_CHECK(rank >= 0 && rank <= 8, kWho, "'{}': '{}' has no readable shape", path, name);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    Tensor t = Tensor::empty(Shape(dims.begin(), dims.end()), DType::f32);
    RELPOS_CHECK(
        H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) >= 0,
        kWho, "'{}': cannot read '{}'", path, name);
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
         std::is_same_v<T, bool>                   ? "true or false"
         : std::is_same_v<T, std::vector<int64_t>> ? "a list of integers"
                                                   : "a number",
         h.at(key).dump());
  }
}

// An integer key of the hyper-parameters in [least, 2^40]: a fraction, or a number past int64,
// is refused by the file and the key instead of being cut or wrapped.
int64_t integer_hparam(const Json& h, const std::string& path, const char* key, int64_t least) {
  RELPOS_CHECK(h.contains(key), kWho, "'{}' has no '{}'", path, key);
  const Json& v = h.at(key);
  RELPOS_CHECK(v.is_number_integer(), kWho, "'{}': '{}' must be an integer, got {}", path, key,
               v.dump());
  // An unsigned number past int64 would wrap in get<int64_t>.
  const bool fits = !v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t{kLargestSize};
  RELPOS_CHECK(fits && v.get<int64_t>() >= least && v.get<int64_t>() <= kLargestSize, kWho,
               "'{}': '{}' must be in [{}, 2^40], got {}", path, key, least, v.dump());
  return v.get<int64_t>();
}

// A size of the hyper-parameters: an integer >= 1.
int64_t size_hparam(const Json& h, const std::string& path, const char* key) {
  return integer_hparam(h, path, key, 1);
}

// A dropout probability of the hyper-parameters, in [0, 1).
double probability_hparam(const Json& h, const std::string& path, const char* key) {
  const double p = hparam<double>(h, path, key);
  RELPOS_CHECK(p >= 0 && p < 1, kWho, "'{}': '{}' must be in [0, 1), got {}", path, key, p);
  return p;
}

// The relpos configuration of the reference model: transformer_xl with its sizes, evaluated in
// the reference's layout. The reference's extended context (ext_len) has no counterpart.
std::string config_text(const Json& h, const ReferenceImport& r) {
  const std::string& p = r.hparams;
  RELPOS_CHECK(!h.contains("ext_len") || h.at("ext_len") == 0, kWho,
               "'{}': ext_len must be 0 (relpos's transformer_xl has no extended context), got {}",
               p, h.contains("ext_len") ? h.at("ext_len").dump() : "");
  const int64_t heads = size_hparam(h, p, "n_head");
  return fmt::format(
      "name: {}\n"
      "model:\n  type: transformer_xl\n  num_layers: {}\n  num_heads: {}\n  model_dim: {}\n"
      "  qkv_dim: {}\n  mlp_dim: {}\n  dropout: {}\n  attention_dropout: {}\n  norm: {}\n"
      "  vocab_size: {}\n  mem_len: {}\n  clamp_len: {}\n  same_length: {}\n"
      "  tie_weights: {}\n"
      "data: {{dataset: chars, dir: '{}', vocabulary: all, tgt_len: {}, batch_size: {}}}\n"
      "optimizer: {{type: adam}}\ntrain: {{steps: 1}}\neval: {{layout: reference}}\n",
      std::filesystem::path(r.out).stem().string(), size_hparam(h, p, "n_layer"), heads,
      size_hparam(h, p, "d_model"), heads * size_hparam(h, p, "d_head"),
      size_hparam(h, p, "d_inner"), probability_hparam(h, p, "dropout"),
      probability_hparam(h, p, "dropatt"), hparam<bool>(h, p, "pre_lnorm") ? "pre" : "post",
      size_hparam(h, p, "n_token"), integer_hparam(h, p, "mem_len", 0),
      // The reference clamps only when clamp_len > 0.
      std::max<int64_t>(0, integer_hparam(h, p, "clamp_len", -kLargestSize)),
      hparam<bool>(h, p, "same_length") ? "true" : "false",
      hparam<bool>(h, p, "tie_weight") ? "true" : "false", r.data_dir, size_hparam(h, p, "tgt_len"),
      h.contains("eval_batch_size") ? size_hparam(h, p, "eval_batch_size") : 10);
}

// The hyper-parameters against the state's own sizes, before a model is built from them (a wrong
// n_layer or d_model could otherwise ask for more memory than the machine has): the number of
// layers, the embedding [n_token, d_model], and layer 0's qkv_net [3 n_head d_head, d_model] and
// first feed-forward weight [d_inner, d_model].
void check_hparams_fit_state(const Json& h, const ReferenceImport& r,
                             const std::map<std::string, Tensor>& state) {
  const std::string& p = r.hparams;
  const int64_t layers = size_hparam(h, p, "n_layer"), d = size_hparam(h, p, "d_model");
  int64_t held = 0;
  while (state.count(fmt::format("layers.{}.dec_attn.qkv_net.weight", held))) ++held;
  RELPOS_CHECK(layers == held, kWho, "'{}': n_layer {}, but '{}' holds {} layers", p, layers,
               r.state, held);
  const auto expect = [&](const std::string& key, const Shape& shape, const char* from) {
    const auto t = state.find(key);
    RELPOS_CHECK(t == state.end() || t->second.shape() == shape, kWho,
                 "'{}': '{}' has shape {}, where {} in '{}' give {}", r.state, key,
                 shape_str(t->second.shape()), from, p, shape_str(shape));
  };
  expect("word_emb.emb_layers.0.weight", {size_hparam(h, p, "n_token"), d}, "n_token and d_model");
  const std::optional<int64_t> qkv =
      checked_numel({3, size_hparam(h, p, "n_head"), size_hparam(h, p, "d_head")});
  RELPOS_CHECK(qkv.has_value(), kWho, "'{}': 3 n_head d_head is past int64", p);
  expect("layers.0.dec_attn.qkv_net.weight", {*qkv, d}, "n_head, d_head and d_model");
  expect("layers.0.pos_ff.CoreNet.0.weight", {size_hparam(h, p, "d_inner"), d},
         "d_inner and d_model");
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
  if (name == "output.weight") return {"crit.out_layers.0.weight", -1};  // tie_weight false
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

// The sinusoid's frequencies of the reference's PositionalEmbedding: 1 / 10000^(2i / d).
Tensor inverse_frequencies(int64_t d) {
  std::vector<float> values;
  for (int64_t i = 0; i < d; i += 2)
    values.push_back(1.0f / std::pow(10000.0f, static_cast<float>(i) / static_cast<float>(d)));
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

// Each of relpos's parameters in `data` replaced by its reference tensor (q, k and v by their
// third of qkv_net), checked for shape and finiteness by the reference's name; the reference keys
// used.
std::map<std::string, bool> place_reference_tensors(CheckpointData& data,
                                                    const std::map<std::string, Tensor>& state,
                                                    const ReferenceImport& r) {
  std::map<std::string, bool> used;
  for (auto& [name, value] : data.params) {
    const auto [theirs, third] = reference_name(name);
    RELPOS_CHECK(state.count(theirs), kWho, "'{}' has no tensor for relpos's '{}' (expected '{}')",
                 r.state, name, theirs.empty() ? "a MemTransformerLM key" : theirs);
    const Tensor& t = state.at(theirs);
    Shape want = value.shape();
    if (third >= 0) want[0] *= 3;
    RELPOS_CHECK(t.shape() == want, kWho, "'{}': '{}' has shape {}, where relpos's '{}' needs {}",
                 r.state, theirs, shape_str(t.shape()), name, shape_str(want));
    RELPOS_CHECK(all_finite(t), kWho, "'{}': '{}' holds NaN or Inf values", r.state, theirs);
    value =
        third < 0 ? t : t.slice(0, third * t.size(0) / 3, (third + 1) * t.size(0) / 3).contiguous();
    used[theirs] = true;
  }
  return used;
}

}  // namespace

void export_reference(const std::string& checkpoint, const std::string& state,
                      const std::string& hparams) {
  check_write(kExport, state);  // before the work, which writes its files at the end
  check_write(kExport, hparams);
  const CheckpointData data = read_checkpoint(checkpoint);
  const std::string& text = saved_config_text(data, checkpoint, kExport);
  const RunConfig config =
      naming_origin(checkpoint, [&] { return parse_config(text, checkpoint); });
  const ModelConfig& m = config.model;
  const Options& own = m.own;
  RELPOS_CHECK(m.type == "transformer_xl" && !own.get<bool>("untie_r", false), kExport,
               "'{}' is a {} (untie_r {}); the reference's MemTransformerLM holds a "
               "transformer_xl with one r_w_bias / r_r_bias",
               checkpoint, m.type, own.get<bool>("untie_r", false));
  const bool tied = own.get<bool>("tie_weights", true);
  const std::optional<std::vector<uint8_t>> vocabulary = saved_vocabulary(data, checkpoint);
  RELPOS_CHECK(vocabulary.has_value(), kExport, "'{}' holds no vocabulary", checkpoint);
  const auto model =
      saved_language_model(data, config, checkpoint, static_cast<int64_t>(vocabulary->size()));
  std::map<std::string, Tensor> out;
  std::map<std::string, std::vector<Tensor>> thirds;
  for (const auto& [name, param] : model->named_parameters()) {
    const auto [theirs, third] = reference_name(name);
    RELPOS_CHECK(!theirs.empty(), kExport, "'{}': relpos's '{}' has no place in MemTransformerLM",
                 checkpoint, name);
    if (third < 0) {
      out[theirs] = param.value();
    } else {
      thirds[theirs].resize(3);
      thirds[theirs][static_cast<size_t>(third)] = param.value();
    }
  }
  for (const auto& [name, parts] : thirds) out[name] = cat(parts, 0);
  if (tied) out["crit.out_layers.0.weight"] = out.at("word_emb.emb_layers.0.weight");
  out["pos_emb.inv_freq"] = inverse_frequencies(m.model_dim);
  const int64_t qkv = m.qkv_dim > 0 ? m.qkv_dim : m.model_dim;
  const int64_t clamp = own.get<int64_t>("clamp_len", 0);
  Json h = Json::object();
  h["n_layer"] = m.num_layers;
  h["n_head"] = m.num_heads;
  h["d_model"] = m.model_dim;
  h["d_head"] = qkv / m.num_heads;
  h["d_inner"] = m.mlp_dim;
  h["dropout"] = m.dropout;
  h["dropatt"] = m.attention_dropout;
  h["tgt_len"] = config.data.tgt_len;
  h["mem_len"] = own.get<int64_t>("mem_len", 0);
  h["ext_len"] = 0;
  h["same_length"] = own.get<bool>("same_length", false);
  h["clamp_len"] = clamp > 0 ? clamp : -1;  // the reference's "no clamp"
  h["pre_lnorm"] = m.norm == "pre";
  h["tie_weight"] = tied;
  h["n_token"] = out.at("word_emb.emb_layers.0.weight").size(0);  // model.vocab_size
  h["eval_batch_size"] =
      config.data.eval_batch_size > 0 ? config.data.eval_batch_size : config.data.batch_size;
  h["symbols"] = *vocabulary;
  // f32 datasets: the reference trains in f32.
  std::vector<std::pair<std::string, Tensor>> datasets;
  for (const auto& [name, t] : out) datasets.emplace_back(name, t.to(DType::f32));
  write_root_datasets(kExport, state, datasets);
  make_file_folder(kExport, hparams);
  write_file_atomic(kExport, hparams, h.dump(1) + "\n");
}

void import_reference(const ReferenceImport& r) {
  check_write(kWho, r.out);
  const Json h = read_json_file(kWho, r.hparams);
  RELPOS_CHECK(h.is_object(), kWho, "'{}' must hold a JSON object of hyper-parameters, not {}",
               r.hparams, h.type_name());
  std::map<std::string, Tensor> state = read_root_datasets(r.state);
  check_hparams_fit_state(h, r, state);
  RunConfig config = parse_config(config_text(h, r), r.hparams);
  ModelConfig model_config = config.model;
  const auto symbols = hparam<std::vector<int64_t>>(h, r.hparams, "symbols");
  // Token ids past the symbols are ones the data never holds (a model.vocab_size above the data's).
  RELPOS_CHECK(!symbols.empty() && static_cast<int64_t>(symbols.size()) <= model_config.vocab_size,
               kWho, "'{}': {} symbols for n_token {} (one byte per token id, at most)", r.hparams,
               symbols.size(), model_config.vocab_size);
  complete_model_config(model_config, config, model_config.vocab_size, 0);
  Generator gen(config.seed);
  const std::shared_ptr<LanguageModel> model = make_language_model(model_config, gen);
  complete_config(config);

  CheckpointData data = capture_state(*model, nullptr);
  const std::map<std::string, bool> used = place_reference_tensors(data, state, r);
  // The tied output weight is the embedding; the sinusoid's frequencies are computed.
  for (const auto& [name, t] : state) {
    if (used.count(name) || name == "pos_emb.inv_freq") continue;
    const Tensor& embedding = state.at("word_emb.emb_layers.0.weight");
    RELPOS_CHECK(name == "crit.out_layers.0.weight" && t.shape() == embedding.shape() &&
                     max(abs(sub(t, embedding))).item() == 0,
                 kWho, "'{}': '{}' has no place in relpos's transformer_xl{}", r.state, name,
                 name == "crit.out_layers.0.weight" ? " (the output weight is tied: it must equal "
                                                      "the embedding)"
                                                    : "");
  }
  restore_module(*model, data);  // shapes checked, each named
  CheckpointData out = capture_state(*model, nullptr);
  out.texts["config"] = config.yaml;
  std::vector<uint8_t> bytes;
  std::map<int64_t, size_t> id_of;  // symbol -> its first token id
  for (const int64_t s : symbols) {
    RELPOS_CHECK(s >= 0 && s < 256, kWho, "'{}': symbol {} is not a byte", r.hparams, s);
    const auto [first, fresh] = id_of.emplace(s, bytes.size());
    RELPOS_CHECK(fresh, kWho, "'{}': symbol {} is token {} and token {} (a byte has one id)",
                 r.hparams, s, first->second, bytes.size());
    bytes.push_back(static_cast<uint8_t>(s));
  }
  out.state.emplace_back("vocabulary",
                         Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}));
  out.ints["step"] = 0;
  make_file_folder(kWho, r.out);
  write_checkpoint(r.out, out);
}

}  // namespace relpos
