// What the config suites share (test_config.cpp, test_config_yaml.cpp): a minimal valid config
// and the message loading a file fails with.
#pragma once

#include <string>
#include <vector>

#include "tests/harness.h"
#include "train/config.h"

namespace relpos::test {

inline constexpr const char* kMinimalConfig = R"(
model: {num_layers: 1}
data: {dataset: mnist}
optimizer: {type: adamw, lr: 1.0e-3}
train: {steps: 10}
)";

// The error load_config(path, overrides) throws ("" when it loads).
inline std::string load_error(const std::string& path,
                              const std::vector<std::string>& overrides = {}) {
  return error_of([&] { load_config(path, overrides); });
}

}  // namespace relpos::test
