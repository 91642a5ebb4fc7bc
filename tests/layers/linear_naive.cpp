// Linear-attention naive twins (tests/layers/linear_naive.h).
#include "tests/layers/linear_naive.h"

#include <algorithm>
#include <cmath>

namespace relpos::test {
namespace {

// One (b, h) slice of rows: row(i)[d] for i < len, d < width.
struct Rows {
  const double* base;
  int64_t width;
  const double* row(int64_t i) const { return base + i * width; }
};

// phi of one row x[0..D) for the elementwise and dpfp maps.
std::vector<double> phi_row(const NaiveFeatureMap& map, const double* x, int64_t D) {
  std::vector<double> out;
  if (map.name == "sikf") {
    for (int64_t d = 0; d < D; ++d) out.push_back(std::exp(x[d]));
  } else if (map.name == "elu1") {
    for (int64_t d = 0; d < D; ++d) out.push_back(x[d] > 0 ? x[d] + 1 : std::exp(x[d]));
  } else if (map.name == "relu") {
    for (int64_t d = 0; d < D; ++d) out.push_back(std::max(x[d], 0.0) + map.relu_eps);
  } else {  // dpfp: r = [relu(x), relu(-x)], phi_(i, j) = r_j r_((j + i) mod 2D)
    std::vector<double> r(2 * D);
    for (int64_t d = 0; d < D; ++d) {
      r[d] = std::max(x[d], 0.0);
      r[D + d] = std::max(-x[d], 0.0);
    }
    for (int64_t i = 1; i <= map.nu; ++i)
      for (int64_t j = 0; j < 2 * D; ++j) out.push_back(r[j] * r[(j + i) % (2 * D)]);
  }
  return out;
}

// performer's exponent W x^ - |x^|^2 / 2 of one row, x^ = x D^(-1/4).
std::vector<double> performer_exponent(const std::vector<double>& w, int64_t m, const double* x,
                                       int64_t D) {
  const double scale = std::pow(static_cast<double>(D), -0.25);
  double half_sq = 0;
  for (int64_t d = 0; d < D; ++d) half_sq += 0.5 * (x[d] * scale) * (x[d] * scale);
  std::vector<double> a(m);
  for (int64_t r = 0; r < m; ++r) {
    double dot = 0;
    for (int64_t d = 0; d < D; ++d) dot += w[r * D + d] * x[d] * scale;
    a[r] = dot - half_sq;
  }
  return a;
}

}  // namespace

std::pair<Tensor, Tensor> naive_feature_map(const NaiveFeatureMap& map, const Tensor& q,
                                            const Tensor& k, const AttentionInputs& in) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3);
  const auto qv = q.to(DType::f64).to_vector<double>(), kv = k.to(DType::f64).to_vector<double>();
  std::vector<uint8_t> keep(B * Lk, 1);
  if (in.key_mask.defined()) keep = in.key_mask.to(Device::cpu()).to_vector<uint8_t>();
  std::vector<double> w;
  int64_t m = 0;
  if (map.name == "performer") {
    w = map.projection.to(DType::f64).to_vector<double>();
    m = map.projection.size(0);
  }
  std::vector<double> phi_q, phi_k;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const Rows qs{&qv[(b * H + h) * Lq * D], D}, ks{&kv[(b * H + h) * Lk * D], D};
      if (map.name == "performer") {
        // exp(W x^ - |x^|^2 / 2) / sqrt(m); padding keys zeroed (dropped by the attention).
        const double norm = 1.0 / std::sqrt(static_cast<double>(m));
        for (int64_t i = 0; i < Lq; ++i)
          for (double x : performer_exponent(w, m, qs.row(i), D))
            phi_q.push_back(std::exp(x) * norm);
        for (int64_t j = 0; j < Lk; ++j)
          for (double x : performer_exponent(w, m, ks.row(j), D))
            phi_k.push_back(keep[b * Lk + j] ? std::exp(x) * norm : 0.0);
      } else {
        for (int64_t i = 0; i < Lq; ++i)
          for (double x : phi_row(map, qs.row(i), D)) phi_q.push_back(x);
        for (int64_t j = 0; j < Lk; ++j)
          for (double x : phi_row(map, ks.row(j), D)) phi_k.push_back(x);
      }
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

std::shared_ptr<Attention> make_linear(
    const std::vector<std::pair<std::string, std::string>>& extra, int64_t heads, int64_t head_dim,
    DType dtype) {
  std::vector<std::pair<std::string, std::string>> kv{{"type", "linear"}};
  kv.insert(kv.end(), extra.begin(), extra.end());
  return make_attention(attention_options(options("attention", kv), heads, head_dim, 0, dtype));
}

Tensor projection_of(const Attention& attention) {
  for (const auto& [name, buffer] : attention.named_buffers())
    if (name == "feature_map.projection") return buffer;
  FAIL("no buffer feature_map.projection");
  return {};
}

}  // namespace relpos::test
