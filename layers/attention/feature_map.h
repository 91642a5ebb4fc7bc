// Feature maps phi of kernelized (linear) attention, sim(q, k) = phi(q)·phi(k) (Katharopoulos et
// al. 2020, eq. 4), built by name from the `feature_map` key of the attention mapping; a map's
// own options (dpfp's `nu`, performer's `num_features`) sit beside it in the same mapping.
// q and k are mapped together because some maps depend on both (sikf's shift, performer's
// shared random projection).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "layers/attention/attention.h"

namespace relpos {

// What a map gives the attention: features scaled by constant positive factors, as the
// exponential maps need to keep exp from overflowing. With phi the map's definition,
//   q = exp(-q_shift) phi(q),  k = exp(-k_shift) phi(k),
// q_shift one value per query row and k_shift one per (b, h). The attention undoes the factors
// where they would not cancel (kernel terms of a positional encoding, eps), so what it computes is
// the formula of the unscaled phi. The shifts are constants: no gradient flows through them.
struct Features {
  Var q;           // [B, H, Lq, F]
  Var k;           // [B, H, Lk, F]
  Tensor q_shift;  // [B, H, Lq, 1] or broadcastable to it; undefined: 0
  Tensor k_shift;  // [B, H, 1, 1] or broadcastable to it; undefined: 0
};

// The features of a map that needs no shift.
inline Features unshifted(Var q, Var k) {
  return {std::move(q), std::move(k), Tensor(), Tensor()};
}

class FeatureMap : public Module {
 public:
  virtual std::string name() const = 0;
  // q: [B, H, Lq, D], k: [B, H, Lk, D] -> features of width F, all entries non-negative.
  virtual Features forward(const Var& q, const Var& k, const AttentionInputs& in) = 0;
  // F for head dim D.
  virtual int64_t feature_dim(int64_t head_dim) const = 0;
  // Whether phi depends on the token's position (AttentionInputs: query i at query_offset + i,
  // key j at j), as cosFormer's re-weighting does. Positions restart with every call, so such a
  // map cannot have its keys' features carried over a stream (linear attention's
  // recurrent state); within one call, with padding or a memory, they are exact.
  virtual bool uses_positions() const { return false; }
  // The longest key sequence (positions 0 .. n - 1) phi is defined for; 0: any.
  virtual int64_t max_keys() const { return 0; }
};

using FeatureMapRegistry = Registry<FeatureMap, const AttentionOptions&>;
FeatureMapRegistry& feature_map_registry();

// Builds the map named by opt.options' `feature_map` (default `fallback`).
std::shared_ptr<FeatureMap> make_feature_map(const AttentionOptions& opt,
                                             const std::string& fallback);

}  // namespace relpos

// In a map's .cpp: RELPOS_REGISTER_FEATURE_MAP("name", Class); Class(const AttentionOptions&).
#define RELPOS_REGISTER_FEATURE_MAP(name, Type)                                              \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_feature_map_registered_, __LINE__) =       \
      ::relpos::feature_map_registry().add(name, [](const ::relpos::AttentionOptions& opt) { \
        return std::static_pointer_cast<::relpos::FeatureMap>(std::make_shared<Type>(opt));  \
      })
