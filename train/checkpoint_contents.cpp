// position_counter / saved_vocabulary / saved_config_text (checkpoint_contents.h).
#include "train/checkpoint_contents.h"

#include <algorithm>

#include "core/error.h"
#include "core/shape.h"
#include "train/module_state.h"
#include "train/task.h"

namespace relpos {

namespace {

// "a float" or "text": what a root attribute of another kind than asked is.
const char* kind_of(const CheckpointData& data, const std::string& key) {
  if (data.ints.count(key) != 0) return "an integer";
  return data.floats.count(key) != 0 ? "a float" : "text";
}

}  // namespace

std::optional<int64_t> position_counter(const CheckpointData& data, const std::string& source,
                                        const std::string& key) {
  RELPOS_CHECK(data.floats.count(key) == 0 && data.texts.count(key) == 0, "checkpoint",
               "'{}': attribute '{}' is {}, not an integer", source, key, kind_of(data, key));
  const auto it = data.ints.find(key);
  if (it == data.ints.end()) return std::nullopt;
  RELPOS_CHECK(it->second >= 0, "checkpoint",
               "'{}': attribute '{}' is {}; a training position is never negative", source, key,
               it->second);
  return it->second;
}

std::optional<std::vector<uint8_t>> saved_vocabulary(const CheckpointData& data,
                                                     const std::string& source) {
  const auto entry = std::find_if(data.state.begin(), data.state.end(),
                                  [](const auto& e) { return e.first == "vocabulary"; });
  if (entry == data.state.end()) return std::nullopt;
  const Tensor& t = entry->second;
  RELPOS_CHECK(t.defined() && t.dtype() == DType::u8 && t.dim() == 1 && t.numel() > 0, "checkpoint",
               "'{}': its vocabulary must be a non-empty u8 vector (a byte per token id), not {}",
               source, t.defined() ? dtype_name(t.dtype()) + shape_str(t.shape()) : "undefined");
  std::vector<uint8_t> bytes = t.to_vector<uint8_t>();
  std::vector<bool> seen(256, false);
  for (const uint8_t b : bytes) {
    RELPOS_CHECK(!seen[b], "checkpoint", "'{}': its vocabulary lists byte {} twice", source, b);
    seen[b] = true;
  }
  return bytes;
}

const std::string& saved_config_text(const CheckpointData& data, const std::string& source,
                                     const char* who) {
  const auto text = data.texts.find("config");
  if (text != data.texts.end()) return text->second;
  RELPOS_CHECK(data.ints.count("config") == 0 && data.floats.count("config") == 0, "checkpoint",
               "'{}': attribute 'config' is {}, not the configuration's YAML text", source,
               kind_of(data, "config"));
  fail(who, "'{}' holds no configuration", source);
}

std::shared_ptr<LanguageModel> saved_language_model(const CheckpointData& data,
                                                    const RunConfig& config,
                                                    const std::string& source, int64_t vocab_size) {
  ModelConfig model_config = config.model;
  complete_model_config(model_config, config, vocab_size, 0);
  Generator gen(config.seed);
  const std::shared_ptr<LanguageModel> model = make_language_model(model_config, gen);
  naming_origin(source, [&] { restore_module(*model, data, false); });
  return model;
}

}  // namespace relpos
