// Attention test helpers (tests/layers/attention_testing.h).
#include "tests/layers/attention_testing.h"

#include <cmath>

#include "core/allocator.h"

namespace relpos::test {

Options options(const std::string& where,
                const std::vector<std::pair<std::string, std::string>>& values) {
  Options opt(where);
  for (const auto& [key, value] : values) opt.set(key, value);
  return opt;
}

AttentionOptions attention_options(const Options& opt, int64_t heads, int64_t head_dim,
                                   int64_t max_len, DType dtype) {
  static Generator gen(20261122);
  return AttentionOptions{opt, heads, head_dim, heads * head_dim, max_len, dtype, &gen};
}

Tensor padding_mask(int64_t k_len, const std::vector<int64_t>& pad) {
  std::vector<uint8_t> m;
  for (int64_t p : pad)
    for (int64_t j = 0; j < k_len; ++j) m.push_back(j < k_len - p ? 1 : 0);
  return Tensor::from_vector(m, {static_cast<int64_t>(pad.size()), k_len});
}

NaiveMask::NaiveMask(const AttentionInputs& in, int64_t q_len, int64_t k_len)
    : causal_(in.causal), window_(in.window), q_len_(q_len), k_len_(k_len) {
  if (in.key_mask.defined()) keep_ = in.key_mask.to(Device::cpu()).to_vector<uint8_t>();
}

bool NaiveMask::blocked(int64_t b, int64_t i, int64_t j) const {
  if (!keep_.empty() && keep_[b * k_len_ + j] == 0) return true;
  const int64_t position = i + (k_len_ - q_len_);  // the query's key position when causal
  return causal_ && (j > position || (window_ > 0 && j <= position - window_));
}

Tensor naive_scores(const Tensor& q, const Tensor& k) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3);
  const auto qv = q.to(DType::f64).to_vector<double>(), kv = k.to(DType::f64).to_vector<double>();
  std::vector<double> s(B * H * Lq * Lk, 0.0);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < Lk; ++j)
        for (int64_t d = 0; d < D; ++d)
          s[(bh * Lq + i) * Lk + j] += qv[(bh * Lq + i) * D + d] * kv[(bh * Lk + j) * D + d];
  return Tensor::from_vector(s, {B, H, Lq, Lk});
}

Tensor naive_softmax_from_scores(const Tensor& scores, const Tensor& v, const AttentionInputs& in,
                                 int64_t head_dim) {
  const int64_t B = scores.size(0), H = scores.size(1), Lq = scores.size(2), Lk = scores.size(3);
  const int64_t Dv = v.size(3);
  const auto sv = scores.to(DType::f64).to_vector<double>();
  const auto vv = v.to(DType::f64).to_vector<double>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const NaiveMask mask(in, Lq, Lk);
  std::vector<double> out(B * H * Lq * Dv, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t bh = b * H + h;
        double top = -INFINITY;
        for (int64_t j = 0; j < Lk; ++j)
          if (!mask.blocked(b, i, j)) top = std::max(top, sv[(bh * Lq + i) * Lk + j] * scale);
        double total = 0;
        std::vector<double> w(Lk, 0.0);
        for (int64_t j = 0; j < Lk; ++j)
          if (!mask.blocked(b, i, j))
            total += w[j] = std::exp(sv[(bh * Lq + i) * Lk + j] * scale - top);
        if (total == 0) continue;  // no key to attend: zeros (AttentionInputs::causal)
        for (int64_t j = 0; j < Lk; ++j)
          for (int64_t d = 0; d < Dv; ++d)
            out[(bh * Lq + i) * Dv + d] += w[j] / total * vv[(bh * Lk + j) * Dv + d];
      }
  return Tensor::from_vector(out, {B, H, Lq, Dv});
}

void check_softmax_with_score_bias(Positional& positional, const NaiveBias& naive_bias,
                                   const std::vector<std::pair<int64_t, int64_t>>& lengths) {
  const int64_t B = 2, H = 3, D = 5, Dv = 4;
  auto attn = make_attention(attention_options(options("attention", {{"type", "softmax"}}), H, D));
  for (auto [lq, lk] : lengths) {
    for (bool causal : {false, true}) {
      for (bool masked : {false, true}) {
        if (causal && lq > lk) continue;  // causal queries end with their keys (after a memory)
        RELPOS_INFO("Lq {} Lk {} causal {} masked {}", lq, lk, causal, masked);
        const Tensor q = random_tensor({B, H, lq, D}, DType::f64, 2);
        const Tensor k = random_tensor({B, H, lk, D}, DType::f64, 3);
        const Tensor v = random_tensor({B, H, lk, Dv}, DType::f64, 4);
        const AttentionInputs in{masked ? padding_mask(lk, {0, lk / 2}) : Tensor(), causal,
                                 &positional};
        const Tensor scores = add(naive_scores(q, k), naive_bias(q, lk, in.query_offset(lq, lk)));
        CHECK_CLOSE(attn->forward(Var(q), Var(k), Var(v), in).value(),
                    naive_softmax_from_scores(scores, v, in, D), 1e-12, 1e-12);
      }
    }
  }
}

int64_t peak_bytes_of(Device device, const std::function<void()>& step) {
  const int64_t before = memory_stats(device).current_bytes;
  reset_peak_memory(device);
  step();
  return memory_stats(device).peak_bytes - before;
}

double skew_shifted_score(const std::vector<double>& q, const std::vector<double>& e, int64_t dim,
                          int64_t t3, int64_t i, int64_t t) {
  double s = 0;
  for (int64_t d = 0; d < dim; ++d) s += q[i * dim + d] * e[d * (2 * t3 - 1) + t3 - 1 - t];
  return s;
}

Tensor naive_skew_scores(const Tensor& q, const Tensor& e, int64_t k_len, int64_t offset) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), D = q.size(3);
  const int64_t t3 = (e.size(1) + 1) / 2;
  const auto qv = q.to(DType::f64).to_vector<double>(), ev = e.to(DType::f64).to_vector<double>();
  std::vector<double> s(B * H * Lq * k_len);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const std::vector<double> q_bh(qv.begin() + bh * Lq * D, qv.begin() + (bh + 1) * Lq * D);
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < k_len; ++j)
        s[(bh * Lq + i) * k_len + j] = skew_shifted_score(q_bh, ev, D, t3, i, j - (i + offset));
  }
  return Tensor::from_vector(s, {B, H, Lq, k_len});
}

}  // namespace relpos::test
