// Linear-attention test helpers: feature maps and kernelized attention by explicit loops in f64
// from the papers' definitions (never through the library's code), and building the "linear"
// variant. Every registered feature map has a naive twin here, registered by the map's own test
// file (the built-in maps' in linear_naive.cpp), so the generic tests (linear attention against
// loops, the combinations, the language models) cover a new map without edits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/layers/attention_testing.h"

namespace relpos::test {

using Kv = std::vector<std::pair<std::string, std::string>>;

// A feature map by its definition, in f64: phi of one row x[0..D) of a query or a key at its
// absolute position (query i at AttentionInputs::query_offset + i, key j at j).
using NaivePhi = std::function<std::vector<double>(const double* x, int64_t D, int64_t position)>;

struct NaiveFeatureMapTwin {
  // The twin of the map built from `options` (the attention mapping) inside `built`, which holds
  // anything the map drew (performer's projection).
  std::function<NaivePhi(const Options& options, const Attention& built)> make;
  // The option sets (beside feature_map: name) the generic tests run the map with; a test that
  // runs the map once takes the first (keep it small and cheap).
  std::vector<Kv> cases = {{}};
};

// In a map's test file: RELPOS_REGISTER_NAIVE_FEATURE_MAP("name", NaiveFeatureMapTwin{...}).
bool register_naive_feature_map(const std::string& name, NaiveFeatureMapTwin twin);
#define RELPOS_REGISTER_NAIVE_FEATURE_MAP(name, ...)                      \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_naive_map_, __LINE__) = \
      ::relpos::test::register_naive_feature_map(name, __VA_ARGS__)

// The twin of `map`; throws naming the map when its test file registered none.
const NaiveFeatureMapTwin& naive_feature_map_twin(const std::string& map);

// The attention mapping of `map` in its case `extra`: {feature_map: map} + extra.
Kv map_options(const std::string& map, const Kv& extra = {});

// q: [B, H, Lq, D], k: [B, H, Lk, D] -> {phi(q) [B, H, Lq, F], phi(k) [B, H, Lk, F]} by the twin of
// the map in `options` (an attention mapping, feature_map default elu1) of the built attention,
// f64 on the CPU, without any shift (exponents beyond ~700 overflow); padding keys get zeros.
std::pair<Tensor, Tensor> naive_feature_map(const Kv& options, const Attention& built,
                                            const Tensor& q, const Tensor& k,
                                            const AttentionInputs& in);

// Y_i = sum_j s_ij v_j / (sum_j s_ij + eps) with s_ij = phi(q_i)·phi(k_j), over the keys query i
// sees (NaiveMask); kernel terms extra_num [B, H, Lq, Dv] and extra_den [B, H, Lq, 1] are added to
// the sums when defined. f64 on the CPU.
Tensor naive_linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                              const AttentionInputs& in, double eps,
                              const Tensor& extra_num = Tensor(),
                              const Tensor& extra_den = Tensor());

// The "linear" variant with `extra` options beside its type, `heads` heads of size `head_dim`.
std::shared_ptr<Attention> make_linear(const Kv& extra, int64_t heads, int64_t head_dim,
                                       DType dtype = DType::f64, int64_t max_len = 0);

// The performer's W [m, D] of a linear attention (its buffer "feature_map.projection").
Tensor projection_of(const Attention& attention);

}  // namespace relpos::test
