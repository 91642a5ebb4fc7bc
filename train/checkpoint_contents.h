// Named entries of a checkpoint's data read with their checks: what eval, generate, export and a
// resumed run take from a file someone else may have written. Each refusal names the file:
//   [checkpoint] '<source>': attribute 'step' is -7; a training position is never negative
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint.h"

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

}  // namespace relpos
