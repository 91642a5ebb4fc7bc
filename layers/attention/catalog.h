// The attention configurations relpos can build, enumerated from the three registries (the only
// lists of variants, feature maps and positional encodings): what `relpos list` prints, the
// attention benchmark times and the generic tests run. An entry appears here by registering
// itself; names beginning with "test_" are test fixtures and are left out.
#pragma once

#include <string>
#include <vector>

#include "core/options.h"

namespace relpos {

struct AttentionSetup {
  // variant[_feature map][_positional][_causal], e.g. linear_sikf_fastrpb, softmax_causal; a
  // variant that is causal only (rel_xl) carries no _causal suffix.
  std::string name;
  Options attention{"attention"};    // {type, feature_map}
  Options positional{"positional"};  // {type}, or empty: no relative encoding
  bool causal = false;
  bool quadratic = false;  // the variant holds the [Lq, Lk] scores (N^2 memory, not only time)
};

// Registered names, sorted, without test fixtures.
std::vector<std::string> attention_names();
std::vector<std::string> feature_map_names();
std::vector<std::string> positional_names();

// Every variant alone (a kernelized one once per feature map; a fused one also as <name>_naive,
// its twin that builds the [Lq, Lk] weights) in the form it runs by default (bidirectional
// unless causal only), then causally where that is a second form; then, when
// `with_positional`, every positional encoding inside every variant of the first group that
// hosts it. Each is built once at a small size to learn what it takes; what refuses is left out.
std::vector<AttentionSetup> attention_setups(bool with_positional = true);

// Why MultiHeadAttention refuses `setup` at this size, built or in a forward pass over random
// inputs (the error's text), or "" when it runs.
std::string setup_refusal(const AttentionSetup& setup, int64_t model_dim, int64_t num_heads,
                          int64_t max_len);

}  // namespace relpos
