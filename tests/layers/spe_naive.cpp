// Naive twins of stochastic positional encoding (tests/layers/spe_naive.h).
#include "tests/layers/spe_naive.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

namespace relpos::test {
namespace {

std::vector<double> values(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f64).to_vector<double>();
}

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

double softplus(double x) {
  return std::log1p(std::exp(x));
}

}  // namespace

Var parameter(const Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return p;
  return {};
}

NaiveCodes naive_sine_codes(const Tensor& freqs, const Tensor& offsets, const Tensor& gains,
                            const Tensor& noise, int64_t len) {
  const int64_t H = freqs.size(0), D = freqs.size(1), K = freqs.size(2), R = noise.size(3);
  const auto f = values(freqs), o = values(offsets), g = values(gains), z = values(noise);
  const double s = spe_scale(R, D);
  std::vector<double> qbar(H * len * D * R, 0.0), kbar(H * len * D * R, 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t p = (h * D + d) * K + k;
        const double omega = std::numbers::pi * sigmoid(f[p]), gamma = softplus(g[p]);
        for (int64_t l = 0; l < len; ++l)
          for (int64_t r = 0; r < R; ++r) {
            const double zc = z[((h * D + d) * 2 * K + k) * R + r];
            const double zs = z[((h * D + d) * 2 * K + K + k) * R + r];
            const int64_t i = ((h * len + l) * D + d) * R + r;
            qbar[i] +=
                s * gamma * (std::cos(omega * l + o[p]) * zc + std::sin(omega * l + o[p]) * zs);
            kbar[i] += s * gamma * (std::cos(omega * l) * zc + std::sin(omega * l) * zs);
          }
      }
  return {Tensor::from_vector(qbar, {H, len, D, R}), Tensor::from_vector(kbar, {H, len, D, R})};
}

NaiveCodes naive_conv_codes(const Tensor& weight_q, const Tensor& weight_k, const Tensor& noise,
                            int64_t rows, int64_t cols) {
  const int64_t H = noise.size(0), D = noise.size(1), R = noise.size(2), n = noise.size(3);
  const int64_t kh = weight_q.dim() == 4 ? weight_q.size(2) : 1, kw = weight_q.size(-1);
  const int64_t stride = cols + kw - 1, L = rows * cols;
  const auto wq = values(weight_q), wk = values(weight_k), z = values(noise);
  const double s = spe_scale(R, D);
  std::vector<double> qbar(H * L * D * R, 0.0), kbar(H * L * D * R, 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t w = ((h * D + d) * kh + a) * kw + b;
                const double x = z[((h * D + d) * R + r) * n + (i + a) * stride + j + b];
                const int64_t out = ((h * L + i * cols + j) * D + d) * R + r;
                qbar[out] += s * wq[w] * x;
                kbar[out] += s * wk[w] * x;
              }
  return {Tensor::from_vector(qbar, {H, L, D, R}), Tensor::from_vector(kbar, {H, L, D, R})};
}

NaiveCodes naive_codes(const StochasticPositional& spe, const Tensor& noise, int64_t rows,
                       int64_t cols) {
  if (spe.name() == "sinspe")
    return naive_sine_codes(parameter(spe, "freqs").value(), parameter(spe, "offsets").value(),
                            parameter(spe, "gains").value(), noise, rows * cols);
  const Tensor wq = parameter(spe, "conv_q.weight").value();
  const Var wk = parameter(spe, "conv_k.weight");  // undefined when shared
  return naive_conv_codes(wq, wk.defined() ? wk.value() : wq, noise, rows, cols);
}

std::pair<Tensor, Tensor> naive_spe_transform(const StochasticPositional& spe, const Tensor& q,
                                              const Tensor& k, int64_t rows, int64_t query_offset) {
  const int64_t lq = q.size(2), lk = k.size(2);
  // Positions from the earliest (key 0 or query 0) to the latest, counted from 0.
  const int64_t first = std::min<int64_t>(0, query_offset);
  const int64_t len = std::max(lk, query_offset + lq) - first;
  Generator gen(spe.eval_seed());
  const Tensor gate = spe.gate().defined() ? spe.gate().value() : Tensor();
  const Tensor gate_noise =
      gate.defined() ? spe.draw_gate_noise(gen, DType::f64, Device::cpu()) : Tensor();
  const Tensor noise = spe.draw_noise(len, gen, DType::f64, Device::cpu());
  const NaiveCodes c = naive_codes(spe, noise, rows, len / rows);
  return naive_spe_filter(q, k, c.qbar.slice(1, query_offset - first, query_offset - first + lq),
                          c.kbar.slice(1, -first, lk - first), gate, gate_noise);
}

std::pair<Tensor, Tensor> naive_spe_filter(const Tensor& q, const Tensor& k, const Tensor& qbar,
                                           const Tensor& kbar, const Tensor& gate,
                                           const Tensor& gate_noise) {
  const int64_t H = q.size(1), D = q.size(3), R = qbar.size(3);
  const std::vector<double> g = gate.defined() ? values(gate) : std::vector<double>();
  const std::vector<double> n = gate.defined() ? values(gate_noise) : std::vector<double>();
  auto apply = [&](const Tensor& x, const Tensor& bar) {
    const int64_t B = x.size(0), L = x.size(2);
    const auto xv = values(x), bv = values(bar);
    std::vector<double> out(B * H * L * R, 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t d = 0; d < D; ++d) {
              double code = bv[((h * L + l) * D + d) * R + r];
              if (!g.empty()) {
                const double sg = sigmoid(g[h * D + d]);
                code = std::sqrt(1 - sg) * code + std::sqrt(sg) * n[(h * D + d) * R + r];
              }
              out[((b * H + h) * L + l) * R + r] += xv[((b * H + h) * L + l) * D + d] * code;
            }
    return Tensor::from_vector(out, {B, H, L, R});
  };
  return {apply(q, qbar), apply(k, kbar)};
}

SpeKernel sine_kernel(const Tensor& freqs, const Tensor& offsets, const Tensor& gains,
                      int64_t realizations) {
  const int64_t D = freqs.size(1), K = freqs.size(2);
  const double s = spe_scale(realizations, D);
  return [=, f = values(freqs), o = values(offsets), g = values(gains)](int64_t h, int64_t d,
                                                                        int64_t, int64_t dc) {
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = (h * D + d) * K + k;
      const double gamma = softplus(g[p]);
      sum += gamma * gamma * std::cos(std::numbers::pi * sigmoid(f[p]) * dc + o[p]);
    }
    return realizations * s * s * sum / (2.0 * K);
  };
}

SpeKernel conv_kernel(const Tensor& weight_q, const Tensor& weight_k, int64_t head_dim,
                      int64_t realizations) {
  const int64_t kh = weight_q.dim() == 4 ? weight_q.size(2) : 1, kw = weight_q.size(-1);
  const double s = spe_scale(realizations, head_dim);
  return [=, wq = values(weight_q), wk = values(weight_k)](int64_t h, int64_t d, int64_t dr,
                                                           int64_t dc) {
    // E[Q̄_m K̄_n] = s² Σ_(a,b) w_q[a, b] w_k[a + dr, b + dc] per realization (unit white noise).
    const int64_t c = (h * head_dim + d) * kh * kw;
    double sum = 0;
    for (int64_t a = std::max<int64_t>(0, -dr); a < std::min(kh, kh - dr); ++a)
      for (int64_t b = std::max<int64_t>(0, -dc); b < std::min(kw, kw - dc); ++b)
        sum += wq[c + a * kw + b] * wk[c + (a + dr) * kw + b + dc];
    return realizations * s * s * sum;
  };
}

Stationarity stationarity(const Tensor& qbar, const Tensor& kbar, int64_t cols,
                          const SpeKernel& kernel) {
  const int64_t H = qbar.size(0), L = qbar.size(1), D = qbar.size(2), R = qbar.size(3);
  const auto q = values(qbar), k = values(kbar);
  auto at = [&](const std::vector<double>& x, int64_t h, int64_t l, int64_t d, int64_t r) {
    return x[((h * L + l) * D + d) * R + r];
  };
  Stationarity out;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) {
      // C[m, n], and the mean squared norms of the codes: the unit the errors are measured in.
      std::vector<double> c(L * L, 0.0);
      double q_norm = 0, k_norm = 0;
      for (int64_t m = 0; m < L; ++m)
        for (int64_t r = 0; r < R; ++r) {
          q_norm += at(q, h, m, d, r) * at(q, h, m, d, r) / L;
          k_norm += at(k, h, m, d, r) * at(k, h, m, d, r) / L;
          for (int64_t n = 0; n < L; ++n) c[m * L + n] += at(q, h, m, d, r) * at(k, h, n, d, r);
        }
      const double unit = std::sqrt(q_norm * k_norm);
      std::map<std::pair<int64_t, int64_t>, std::pair<double, int64_t>> by_offset;  // sum, count
      auto offset = [&](int64_t m, int64_t n) {
        return std::pair<int64_t, int64_t>{m / cols - n / cols, m % cols - n % cols};
      };
      for (int64_t m = 0; m < L; ++m)
        for (int64_t n = 0; n < L; ++n) {
          auto& [total, count] = by_offset[offset(m, n)];
          total += c[m * L + n];
          ++count;
        }
      for (int64_t m = 0; m < L; ++m)
        for (int64_t n = 0; n < L; ++n) {
          const auto [dr, dc] = offset(m, n);
          const auto& [total, count] = by_offset[{dr, dc}];
          out.spread = std::max(out.spread, std::abs(c[m * L + n] - total / count) / unit);
          out.kernel_error =
              std::max(out.kernel_error, std::abs(c[m * L + n] - kernel(h, d, dr, dc)) / unit);
        }
    }
  return out;
}

}  // namespace relpos::test
