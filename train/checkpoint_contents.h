// Named entries of a checkpoint's data read with their checks: what eval, generate, export and a
// resumed run take from a file someone else may have written. Each refusal names the file:
//   [checkpoint] '<source>': attribute 'step' is -7; a training position is never negative
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layers/models/model.h"
#include "train/checkpoint.h"
#include "train/config.h"

namespace relpos {

// The position counter `key` (step, epoch, ...): nullopt when absent; a negative count, or a
// float or text under its name, is refused.
std::optional<int64_t> position_counter(const CheckpointData& data, const std::string& source,
                                        const std::string& key);

// A language model's vocabulary (state "vocabulary": the byte of each token id): nullopt when
// absent; refused unless a u8 vector of distinct bytes, at least one.
std::optional<std::vector<uint8_t>> saved_vocabulary(const CheckpointData& data,
                                                     const std::string& source);

// The run's configuration as YAML text (attribute "config"); `who` names the command refusing a
// checkpoint without one.
const std::string& saved_config_text(const CheckpointData& data, const std::string& source,
                                     const char* who);

// The language model a checkpoint holds, built from `config` (its stored configuration, with any
// overrides of how it runs) for `vocab_size` token ids, its parameters loaded and checked as eval
// checks them: every name, shape, dtype and value.
std::shared_ptr<LanguageModel> saved_language_model(const CheckpointData& data,
                                                    const RunConfig& config,
                                                    const std::string& source, int64_t vocab_size);

}  // namespace relpos
