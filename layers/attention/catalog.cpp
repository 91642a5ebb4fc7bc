// The registered attention configurations (layers/attention/catalog.h).
#include "layers/attention/catalog.h"

#include "autograd/grad_mode.h"
#include "core/ops.h"
#include "layers/attention/feature_map.h"
#include "layers/attention/multi_head.h"
#include "layers/attention/positional.h"

namespace relpos {

namespace {

// The size each configuration is probed at: small, a square 4 x 4 grid for 2-D encodings.
constexpr int64_t kProbeDim = 8, kProbeHeads = 2, kProbeLen = 16;

std::vector<std::string> without_fixtures(std::vector<std::string> names) {
  std::erase_if(names, [](const std::string& n) { return n.rfind("test_", 0) == 0; });
  return names;
}

// A variant's or an encoding's options at the probe size.
AttentionOptions probe_options(const Options& options) {
  AttentionOptions opt;
  opt.options = options;
  opt.num_heads = kProbeHeads;
  opt.head_dim = kProbeDim / kProbeHeads;
  opt.model_dim = kProbeDim;
  opt.max_len = kProbeLen;
  return opt;
}

AttentionCaps caps_of(const Options& attention) {
  return make_attention(probe_options(attention))->caps();
}

// Whether the encoding gives its score bias as a table of distances (Positional::position_table).
bool gives_position_table(const Options& positional) {
  const std::shared_ptr<Positional> encoding = make_positional(probe_options(positional));
  const NoGradGuard no_grad;
  const Var q(zeros({1, kProbeHeads, kProbeLen, kProbeDim / kProbeHeads}));
  return encoding != nullptr &&
         encoding->position_table(q, kProbeLen, AttentionInputs{}).table.defined();
}

}  // namespace

std::vector<std::string> attention_names() {
  return without_fixtures(attention_registry().names());
}
std::vector<std::string> feature_map_names() {
  return without_fixtures(feature_map_registry().names());
}
std::vector<std::string> positional_names() {
  return without_fixtures(positional_registry().names());
}

std::string setup_refusal(const AttentionSetup& setup, int64_t model_dim, int64_t num_heads,
                          int64_t max_len) {
  MultiHeadAttentionConfig c;
  c.model_dim = model_dim;
  c.num_heads = num_heads;
  c.max_len = max_len;
  c.attention = setup.attention;
  c.positional = setup.positional;
  try {
    MultiHeadAttention layer(c);
    // One forward pass too: some refusals come with the inputs (causality, lengths).
    const NoGradGuard no_grad;
    Generator gen(0);
    layer.forward(Var(randn({1, max_len, model_dim}, gen)), Tensor(), setup.causal);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<AttentionSetup> attention_setups(bool with_positional) {
  std::vector<AttentionSetup> alone, causal, hosted, hosts;
  for (const std::string& variant : attention_names()) {
    Options base("attention");
    base.set("type", variant);
    const AttentionCaps caps = caps_of(base);
    std::vector<AttentionSetup> forms;
    if (caps.kernelized) {
      for (const std::string& map : feature_map_names())
        forms.push_back({variant + "_" + map, base.with("feature_map", map)});
    } else {
      forms.push_back({variant, base});
    }
    if (caps.fused) {  // the naive twin too, as <name>_naive
      const size_t fused_forms = forms.size();
      for (size_t i = 0; i < fused_forms; ++i)
        forms.push_back({forms[i].name + "_naive", forms[i].attention.with("fused", "false")});
    }
    for (AttentionSetup& s : forms) {
      const bool twin = caps.fused && !caps_of(s.attention).fused;
      s.quadratic = caps.forms_scores && (twin || !caps.fused);
      s.causal = caps.causal_only;
      if (!setup_refusal(s, kProbeDim, kProbeHeads, kProbeLen).empty()) continue;
      alone.push_back(s);
      if (!twin) hosts.push_back(s);  // with an encoding, a twin would repeat its fused form
      if (caps.causal_only) continue;
      AttentionSetup c = s;
      c.name += "_causal";
      c.causal = true;
      causal.push_back(c);
    }
  }
  if (with_positional)
    for (const std::string& name : positional_names())
      for (const AttentionSetup& host : hosts) {
        AttentionSetup s = host;
        s.name += "_" + name;
        s.positional = s.positional.with("type", name);  // copies share state: a new one
        // A score bias sends a fused variant to its naive twin, unless the host takes it as a
        // table of distances (on the CPU): counted as N^2 memory (SPE, which rewrites q and k
        // instead, stays linear; the count errs on the safe side).
        const AttentionCaps caps = caps_of(s.attention);
        const bool in_tiles = caps.takes_position_table && gives_position_table(s.positional);
        s.quadratic = s.quadratic || (caps.forms_scores && !in_tiles);
        if (setup_refusal(s, kProbeDim, kProbeHeads, kProbeLen).empty()) hosted.push_back(s);
      }
  alone.insert(alone.end(), causal.begin(), causal.end());
  alone.insert(alone.end(), hosted.begin(), hosted.end());
  return alone;
}

}  // namespace relpos
