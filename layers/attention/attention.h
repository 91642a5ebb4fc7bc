// The attention interface (DESIGN §4): a variant maps multi-head queries, keys and values to
// outputs, given a key padding mask, a causal flag and the layer's relative positional encoding.
// Variants are built by name from the YAML mapping under `attention:`; a new variant is one file
// ending in RELPOS_REGISTER_ATTENTION (docs/adding-attention.md).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/generator.h"
#include "core/options.h"
#include "layers/module.h"
#include "layers/registry.h"

namespace relpos {

class Positional;

// How the enclosing model attends: causally (a language model), both ways (a classifier), or not
// known (a layer built alone, a benchmark). A variant refuses an option that means nothing in the
// model's direction.
enum class AttentionDirection { unknown, both_ways, causal };

// What a variant, a feature map or a positional encoding is built from: its YAML mapping plus
// the sizes the enclosing layer knows.
struct AttentionOptions {
  Options options{"attention"};  // reads are tracked: unknown keys are refused after building
  int64_t num_heads = 1;
  int64_t head_dim = 0;   // D of queries and keys (values may differ)
  int64_t model_dim = 0;  // d_model of the enclosing layer
  int64_t max_len = 0;    // the longest key sequence the layer will see (0: not known)
  DType dtype = DType::f32;
  Generator* gen = nullptr;  // for initialization; the default generator when null
  // Special tokens the model frames the content with (CLS/BOS in front, SEP/EOS at the end);
  // encodings that leave them out (FastRPB) take these unless their mapping says otherwise.
  int64_t special_front = 0;
  int64_t special_back = 0;
  // The model's attention_dropout: the default of a variant's own `dropout` option (for the
  // variants that drop attention weights: softmax, rel_xl).
  double dropout = 0;
  AttentionDirection direction = AttentionDirection::unknown;

  Generator& generator() const;
};

// What a variant carries from one call to the next over consecutive segments of one stream
// (causal linear attention's running sums): `in` as the previous call left it (empty at a
// stream's start), `out` filled by this call. Tensors only, detached: no gradient crosses calls.
struct AttentionCarry {
  std::map<std::string, Tensor> in, out;
};

struct AttentionInputs {
  // [B, Lk], u8: nonzero marks a real key, zero a padding key no query may attend.
  // Undefined: every key is real.
  Tensor key_mask;
  // Query i attends key j only when j <= i + (Lk - Lq): the two sequences are aligned at their
  // ends, as when keys are a segment memory followed by the queries' own segment. In every
  // variant a query left with no key to attend outputs zeros.
  bool causal = false;
  // The layer's relative positional encoding (null: none); variants ask it for a score bias or
  // kernelized terms (layers/attention/positional.h).
  Positional* positional = nullptr;
  // Absolute positions: key j sits at position j, query i at query_start + i; relative encodings
  // measure distances between these. -1: the default of query_offset() below. Causal attention
  // needs query_start = Lk - Lq (a memory of Lk - Lq keys before the queries' own segment).
  int64_t query_start = -1;
  // Causal only: query i sees at most the `window` keys ending at its own position (Transformer-
  // XL's same_length); 0: every earlier key.
  int64_t window = 0;
  // State carried across the segments of a stream (null: none); variants that cannot carry one
  // refuse it (AttentionCaps::carries_state).
  AttentionCarry* carry = nullptr;

  // The position of query 0: query_start, or by default Lk - Lq when causal (the ends aligned)
  // and 0 otherwise (both sequences counted from 0, as cross attention in seed 004).
  int64_t query_offset(int64_t q_len, int64_t k_len) const {
    if (query_start >= 0) return query_start;
    return causal ? k_len - q_len : 0;
  }
};

// What a variant offers a positional encoding to work with.
struct AttentionCaps {
  bool forms_scores = false;   // builds the [Lq, Lk] logits (takes Positional::score_bias)
  bool kernelized = false;     // phi(Q) (phi(K)^T V) (takes Positional::kernel_terms)
  int64_t feature_dim = 0;     // kernelized: the width F of phi(q) (0: not known)
  bool carries_state = false;  // takes AttentionInputs::carry (the whole past in fixed memory)
  bool causal_only = false;    // refuses causal = false (its positions exist for earlier keys only)
  bool own_positions = false;  // encodes relative positions itself: hosts no positional encoding
  bool uses_positions = false;  // its output depends on the tokens' positions (rel_xl, cosFormer)
  int64_t max_keys = 0;         // the longest key sequence it is defined for (cosFormer's); 0: any
  // Runs as the fused attention op (memory linear in L) unless `fused: false` asks for its naive
  // twin, which builds the [Lq, Lk] weights.
  bool fused = false;
  // Fused: takes an encoding's Positional::position_table inside the op's tiles, so that
  // score bias costs no [Lq, Lk] memory either.
  bool takes_position_table = false;
};

class Attention : public Module {
 public:
  // q: [B, H, Lq, D], k: [B, H, Lk, D], v: [B, H, Lk, Dv] -> [B, H, Lq, Dv]
  virtual Var forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) = 0;
  virtual AttentionCaps caps() const = 0;
  virtual std::string name() const = 0;
};

using AttentionRegistry = Registry<Attention, const AttentionOptions&>;
AttentionRegistry& attention_registry();

// Builds the variant named by opt.options' `type` (softmax when it has none), then refuses any
// option it did not read.
std::shared_ptr<Attention> make_attention(const AttentionOptions& opt);

// Shape and mask checks every variant starts with; returns {B, H, Lq, Lk}.
struct AttentionDims {
  int64_t batch, heads, q_len, k_len, head_dim, value_dim;
};
AttentionDims check_attention_inputs(const char* variant, const Var& q, const Var& k, const Var& v,
                                     const AttentionInputs& in);

}  // namespace relpos

// In a variant's .cpp: RELPOS_REGISTER_ATTENTION("name", Class); Class(const AttentionOptions&).
#define RELPOS_REGISTER_ATTENTION(name, Type)                                              \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_attention_registered_, __LINE__) =       \
      ::relpos::attention_registry().add(name, [](const ::relpos::AttentionOptions& opt) { \
        return std::static_pointer_cast<::relpos::Attention>(std::make_shared<Type>(opt)); \
      })
