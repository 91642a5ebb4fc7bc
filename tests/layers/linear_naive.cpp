// Linear-attention naive twins (tests/layers/linear_naive.h).
#include "tests/layers/linear_naive.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace relpos::test {
namespace {

std::map<std::string, NaiveFeatureMapTwin>& twins() {
  static std::map<std::string, NaiveFeatureMapTwin> all;
  return all;
}

// An elementwise map: phi(x)_d = f(x_d), F = D.
NaivePhi elementwise(std::function<double(double)> f) {
  return [f](const double* x, int64_t D, int64_t) {
    std::vector<double> out(D);
    for (int64_t d = 0; d < D; ++d) out[d] = f(x[d]);
    return out;
  };
}

// The built-in maps' twins (a map added later registers its own from its test file).
RELPOS_REGISTER_NAIVE_FEATURE_MAP("elu1", NaiveFeatureMapTwin{[](const Options&, const Attention&) {
                                    return elementwise(
                                        [](double x) { return x > 0 ? x + 1 : std::exp(x); });
                                  }});

RELPOS_REGISTER_NAIVE_FEATURE_MAP("relu", NaiveFeatureMapTwin{
                                              [](const Options& o, const Attention&) {
                                                const double eps = o.get<double>("relu_eps", 1e-3);
                                                return elementwise([eps](double x) {
                                                  return std::max(x, 0.0) + eps;
                                                });
                                              },
                                              {{}, {{"relu_eps", "0.05"}}}});

// sikf: exp(x), whichever shift guards it (both compute the unshifted formula).
RELPOS_REGISTER_NAIVE_FEATURE_MAP("sikf", NaiveFeatureMapTwin{[](const Options&, const Attention&) {
                                                                return elementwise([](double x) {
                                                                  return std::exp(x);
                                                                });
                                                              },
                                                              {{}, {{"sikf_shift", "mean"}}}});

// dpfp: r = [relu(x), relu(-x)], phi_(i, j) = r_j r_((j + i) mod 2D), i = 1..nu.
RELPOS_REGISTER_NAIVE_FEATURE_MAP("dpfp", NaiveFeatureMapTwin{
                                              [](const Options& o, const Attention&) -> NaivePhi {
                                                const int64_t nu = o.get<int64_t>("nu", 1);
                                                return [nu](const double* x, int64_t D, int64_t) {
                                                  std::vector<double> r(2 * D), out;
                                                  for (int64_t d = 0; d < D; ++d) {
                                                    r[d] = std::max(x[d], 0.0);
                                                    r[D + d] = std::max(-x[d], 0.0);
                                                  }
                                                  for (int64_t i = 1; i <= nu; ++i)
                                                    for (int64_t j = 0; j < 2 * D; ++j)
                                                      out.push_back(r[j] * r[(j + i) % (2 * D)]);
                                                  return out;
                                                };
                                              },
                                              {{}, {{"nu", "3"}}}});

// performer (FAVOR+): exp(W x^ - |x^|^2 / 2) / sqrt(m), x^ = x D^(-1/4), W the drawn projection.
// 12 features for D = 5: blocks of 5, 5 and 2 rows; 4 keeps a head of 4 (hosts shaw).
RELPOS_REGISTER_NAIVE_FEATURE_MAP(
    "performer",
    NaiveFeatureMapTwin{[](const Options&, const Attention& built) -> NaivePhi {
                          const Tensor projection = projection_of(built);
                          const int64_t m = projection.size(0);
                          const auto w = projection.to(DType::f64).to_vector<double>();
                          return [w, m](const double* x, int64_t D, int64_t) {
                            const double scale = std::pow(static_cast<double>(D), -0.25);
                            double half_sq = 0;
                            for (int64_t d = 0; d < D; ++d)
                              half_sq += 0.5 * (x[d] * scale) * (x[d] * scale);
                            std::vector<double> out(m);
                            for (int64_t r = 0; r < m; ++r) {
                              double dot = 0;
                              for (int64_t d = 0; d < D; ++d) dot += w[r * D + d] * x[d] * scale;
                              out[r] = std::exp(dot - half_sq) / std::sqrt(static_cast<double>(m));
                            }
                            return out;
                          };
                        },
                        {{{"num_features", "4"}, {"redraw_interval", "0"}},
                         {{"num_features", "12"}, {"redraw_interval", "0"}}}});

}  // namespace

bool register_naive_feature_map(const std::string& name, NaiveFeatureMapTwin twin) {
  if (!twins().emplace(name, std::move(twin)).second)
    throw Error("[test] naive feature map '" + name + "' is registered twice");
  return true;
}

const NaiveFeatureMapTwin& naive_feature_map_twin(const std::string& map) {
  const auto it = twins().find(map);
  if (it == twins().end())
    throw Error("[test] feature map '" + map +
                "' has no naive twin: register one in its test file with "
                "RELPOS_REGISTER_NAIVE_FEATURE_MAP (tests/layers/linear_naive.h)");
  return it->second;
}

Kv map_options(const std::string& map, const Kv& extra) {
  Kv kv{{"feature_map", map}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  return kv;
}

std::pair<Tensor, Tensor> naive_feature_map(const Kv& options, const Attention& built,
                                            const Tensor& q, const Tensor& k,
                                            const AttentionInputs& in) {
  const Options opt = test::options("attention", options);
  const NaivePhi phi =
      naive_feature_map_twin(opt.get<std::string>("feature_map", "elu1")).make(opt, built);
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3);
  const int64_t q_start = in.query_offset(Lq, Lk);
  const auto qv = q.to(DType::f64).to_vector<double>(), kv = k.to(DType::f64).to_vector<double>();
  std::vector<uint8_t> keep(B * Lk, 1);
  if (in.key_mask.defined()) keep = in.key_mask.to(Device::cpu()).to_vector<uint8_t>();
  std::vector<double> phi_q, phi_k;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < Lq; ++i)
        for (double x : phi(&qv[((b * H + h) * Lq + i) * D], D, q_start + i)) phi_q.push_back(x);
      for (int64_t j = 0; j < Lk; ++j)
        for (double x : phi(&kv[((b * H + h) * Lk + j) * D], D, j))
          phi_k.push_back(keep[b * Lk + j] ? x : 0.0);
    }
  const int64_t F = static_cast<int64_t>(phi_q.size()) / (B * H * Lq);
  return {Tensor::from_vector(phi_q, {B, H, Lq, F}), Tensor::from_vector(phi_k, {B, H, Lk, F})};
}

Tensor naive_linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                              const AttentionInputs& in, double eps, const Tensor& extra_num,
                              const Tensor& extra_den) {
  const int64_t B = phi_q.size(0), H = phi_q.size(1), Lq = phi_q.size(2), Lk = phi_k.size(2);
  const int64_t F = phi_q.size(3), Dv = v.size(3);
  const auto pq = phi_q.to(DType::f64).to_vector<double>();
  const auto pk = phi_k.to(DType::f64).to_vector<double>();
  const auto vv = v.to(DType::f64).to_vector<double>();
  std::vector<double> en, ed;
  if (extra_num.defined()) {
    en = extra_num.to(DType::f64).to_vector<double>();
    ed = extra_den.to(DType::f64).to_vector<double>();
  }
  const NaiveMask mask(in, Lq, Lk);
  std::vector<double> out(B * H * Lq * Dv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t row = (b * H + h) * Lq + i;
        std::vector<double> num(Dv, 0.0);
        double den = 0;
        for (int64_t j = 0; j < Lk; ++j) {
          if (mask.blocked(b, i, j)) continue;
          double s = 0;
          for (int64_t f = 0; f < F; ++f) s += pq[row * F + f] * pk[((b * H + h) * Lk + j) * F + f];
          den += s;
          for (int64_t c = 0; c < Dv; ++c) num[c] += s * vv[((b * H + h) * Lk + j) * Dv + c];
        }
        if (!en.empty()) {
          den += ed[row];
          for (int64_t c = 0; c < Dv; ++c) num[c] += en[row * Dv + c];
        }
        for (int64_t c = 0; c < Dv; ++c) out[row * Dv + c] = num[c] / (den + eps);
      }
  return Tensor::from_vector(out, {B, H, Lq, Dv});
}

std::shared_ptr<Attention> make_linear(const Kv& extra, int64_t heads, int64_t head_dim,
                                       DType dtype, int64_t max_len) {
  Kv kv{{"type", "linear"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  return make_attention(
      attention_options(options("attention", kv), heads, head_dim, max_len, dtype));
}

Tensor projection_of(const Attention& attention) {
  for (const auto& [name, buffer] : attention.named_buffers())
    if (name == "feature_map.projection") return buffer;
  FAIL("no buffer feature_map.projection");
  return {};
}

}  // namespace relpos::test
