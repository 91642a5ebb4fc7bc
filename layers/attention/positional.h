// Relative positional encodings as objects an attention layer hosts (DESIGN §4). Each encoding
// overrides the hooks it needs and leaves the rest at their "nothing to add" defaults:
//   transform_qk  rewrites q and k before scores or feature maps (stochastic PE)
//   score_bias    S added to Q·Kᵀ before the 1/sqrt(D) scale (Shaw naive, skew; seed 004 eq. 1)
//   position_table  the same S as a table of distances, which the fused attention op applies
//                 inside its tiles (no [Lq, Lk] tensor)
//   kernel_terms  {S_rel·V, S_rel·1} added to the numerator and denominator of kernelized
//                 attention (Shaw at linear cost, seed 003 §IV)
//   output_term   added to the attention output before the output projection (FastRPB W·V)
// An encoding built for a variant that lacks what it needs is refused by check_host, with why.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/attention/attention.h"

namespace relpos {

// A score bias S[i, j] = query_i · table[h][clamp(δ, min, max) - min], δ = i + offset - j (the
// query's position minus the key's): core/ops.h AttentionSpec's position term.
struct PositionTable {
  Var query;  // [B, H, Lq, R]
  Var table;  // [H or 1, max - min + 1, R]
  int64_t offset = 0, min = 0, max = 0;
};

class Positional : public Module {
 public:
  virtual std::string name() const = 0;

  // Throws, saying why, when this encoding cannot work inside `attention`.
  virtual void check_host(const Attention& attention) const {}

  // q: [B, H, Lq, D], k: [B, H, Lk, D] -> [B, H, Lq, D'], [B, H, Lk, D'] with
  // D' = qk_dim(D): the size the attention variant (and its feature map) is built for.
  virtual std::pair<Var, Var> transform_qk(const Var& q, const Var& k, const AttentionInputs& in) {
    return {q, k};
  }
  virtual int64_t qk_dim(int64_t head_dim) const { return head_dim; }
  // q: [B, H, Lq, D] -> S, broadcastable to [B, H, Lq, key_len]; undefined: none.
  virtual Var score_bias(const Var& q, int64_t key_len, const AttentionInputs& in) { return {}; }
  // score_bias as a table of distances (the same S); an undefined table: none.
  virtual PositionTable position_table(const Var& q, int64_t key_len, const AttentionInputs& in) {
    return {};
  }
  // phi_q: [B, H, Lq, F], v: [B, H, Lk, Dv] -> {S_rel·V [B, H, Lq, Dv], S_rel·1 [B, H, Lq, 1]},
  // padding keys (in.key_mask) and, when causal, future keys left out; undefined: none.
  virtual std::pair<Var, Var> kernel_terms(const Var& phi_q, const Var& v,
                                           const AttentionInputs& in) {
    return {};
  }
  // v: [B, H, Lk, Dv] -> [B, H, Lq, Dv], added to the attention output as it is (not
  // normalized); undefined: none.
  virtual Var output_term(const Var& v, int64_t q_len, const AttentionInputs& in) { return {}; }

  // The longest key sequence the encoding's tables cover (learned weights per distance or
  // position); 0: any length.
  virtual int64_t max_keys() const { return 0; }

  // Whether the output rows of the leading special tokens (the CLS a classifier pools) can
  // depend on this encoding. FastRPB's term leaves them out (as the authors' code), so in the
  // last block of a CLS-pooled model it cannot reach the logits (TransformerEncoder warns).
  virtual bool reaches_leading_special_rows() const { return true; }

  // Whether every sequence must fill the encoding's grid (FastRPB 2D relates the pixels of whole
  // images): an encoder then refuses a batch with padding or of another length, whichever batch
  // an example sits in, as it does for input patches.
  virtual bool reads_whole_images() const { return false; }

  // Whether queries and keys must be one sequence (FastRPB's W relates positions of one
  // sequence): no cross attention between two, whose lengths differ from batch to batch.
  virtual bool relates_one_sequence() const { return false; }

  // Why causal queries after a memory cannot take this encoding; empty when they can. A model
  // with a memory refuses it when built (the first segment has no memory, the second fails).
  virtual std::string why_no_memory() const { return {}; }
};

using PositionalRegistry = Registry<Positional, const AttentionOptions&>;
PositionalRegistry& positional_registry();

// Refuses a raster grid option that is not [rows, cols] of positive sizes with at most 2^40
// pixels: "[who] grid must be [rows, cols] ..., got [...]" followed by `hint`.
void check_grid(const char* who, const std::vector<int64_t>& grid, const char* hint = "");

// Builds the encoding named by opt.options' `type` ("none" or no mapping: null), refusing
// unknown options.
std::shared_ptr<Positional> make_positional(const AttentionOptions& opt);

}  // namespace relpos

// In an encoding's .cpp: RELPOS_REGISTER_POSITIONAL("name", Class); Class(const AttentionOptions&).
#define RELPOS_REGISTER_POSITIONAL(name, Type)                                              \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_positional_registered_, __LINE__) =       \
      ::relpos::positional_registry().add(name, [](const ::relpos::AttentionOptions& opt) { \
        return std::static_pointer_cast<::relpos::Positional>(std::make_shared<Type>(opt)); \
      })
