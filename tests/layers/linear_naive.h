// Linear-attention test helpers: the five feature maps and kernelized attention by explicit loops
// in f64 from the papers' definitions (never through the library's code), and building the
// "linear" variant.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/layers/attention_testing.h"

namespace relpos::test {

// A feature map and the options its definition needs.
struct NaiveFeatureMap {
  explicit NaiveFeatureMap(std::string map_name) : name(std::move(map_name)) {}
  std::string name;  // elu1, relu, sikf, dpfp, performer
  double relu_eps = 1e-3;
  int64_t nu = 1;
  Tensor projection;  // performer's W [m, D] (the module's buffer, as drawn)
};

// q: [B, H, Lq, D], k: [B, H, Lk, D] -> {phi(q) [B, H, Lq, F], phi(k) [B, H, Lk, F]}, f64 on the
// CPU, from the definitions without any shift (sikf: exp(x); performer: exp(W x^ - |x^|^2 / 2) /
// sqrt(m)), so exponents beyond ~700 overflow. Padding keys of performer get zeros.
std::pair<Tensor, Tensor> naive_feature_map(const NaiveFeatureMap& map, const Tensor& q,
                                            const Tensor& k, const AttentionInputs& in);

// Y_i = sum_j s_ij v_j / (sum_j s_ij + eps) with s_ij = phi(q_i)·phi(k_j), over the keys query i
// sees (NaiveMask); kernel terms extra_num [B, H, Lq, Dv] and extra_den [B, H, Lq, 1] are added to
// the sums when defined. f64 on the CPU.
Tensor naive_linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                              const AttentionInputs& in, double eps,
                              const Tensor& extra_num = Tensor(),
                              const Tensor& extra_den = Tensor());

// The "linear" variant with `extra` options beside its type, `heads` heads of size `head_dim`.
std::shared_ptr<Attention> make_linear(
    const std::vector<std::pair<std::string, std::string>>& extra, int64_t heads, int64_t head_dim,
    DType dtype = DType::f64);

// The performer's W [m, D] of a linear attention (its buffer "feature_map.projection").
Tensor projection_of(const Attention& attention);

}  // namespace relpos::test
