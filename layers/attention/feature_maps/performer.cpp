// performer: FAVOR+ positive orthogonal random features for the softmax kernel (Choromanski et
// al. 2021, Lemma 1 and §2.4; seed 002 §2.3): with x^ = x D^(-1/4),
//   phi(x) = exp(W x^ - |x^|^2 / 2 - stabilizer) / sqrt(m),  E[phi(q)·phi(k)] ∝ exp(q·k / sqrt(D)),
// W [m, D] orthogonal rows in blocks of D (Gram-Schmidt of Gaussian rows, host f64), each row
// rescaled by the norm of an independent Gaussian vector (chi(D)), as "regularized" = false. The
// features are returned shifted by constants so exp cannot overflow, the max exponent per query
// for q and one max per (b, h) over real keys for k (feature_map.h: the attention undoes them
// where they do not cancel). Options: num_features (m, 256), redraw_interval (1000
// training forward calls; 0: never; never in eval). W is the buffer "projection".
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/feature_map.h"
#include "layers/attention/feature_maps/stabilizer.h"
#include "layers/init.h"

namespace relpos {
namespace {

class PerformerFeatureMap final : public FeatureMap {
 public:
  explicit PerformerFeatureMap(const AttentionOptions& opt)
      : num_features_(opt.options.get_size("num_features", 256)),
        redraw_interval_(opt.options.get<int64_t>("redraw_interval", 1000)),
        head_dim_(opt.head_dim),
        dtype_(opt.dtype),
        gen_(fork_generator(opt.generator())) {
    RELPOS_CHECK(head_dim_ > 0, "feature_map performer", "head_dim must be known, got {}",
                 head_dim_);
    RELPOS_CHECK(redraw_interval_ >= 0, "feature_map performer",
                 "redraw_interval must be >= 0 (0: never), got {}", redraw_interval_);
    projection_ = draw();
    register_buffer("projection", projection_);
    register_generator("generator", gen_);
    register_counter("calls_since_draw", calls_since_draw_);
  }

  Features forward(const Var& q, const Var& k, const AttentionInputs& in) override {
    RELPOS_CHECK(q.size(3) == head_dim_, "feature_map performer", "built for head_dim {}, got {}",
                 head_dim_, q.size(3));
    if (is_training() && redraw_interval_ > 0) {
      if (calls_since_draw_ == redraw_interval_) {
        projection_ = draw().to(projection_.device());
        calls_since_draw_ = 0;
      }
      ++calls_since_draw_;
    }
    const Tensor w = projection_.to(q.device()).to(q.dtype());  // [m, D]
    const double norm = 1.0 / std::sqrt(static_cast<double>(num_features_));
    const Var a_q = exponent(q, w);                                   // [B, H, Lq, m]
    const Tensor q_shift = max(a_q.value(), {3}, true);               // [B, H, Lq, 1]
    const Tensor padding = padding_rows(in.key_mask);                 // [B, 1, Lk, 1] or undefined
    Var a_k = exponent(k, w);                                         // [B, H, Lk, m]
    const Tensor k_shift = max_over_real_keys(a_k.value(), padding);  // [B, H, 1, 1]
    a_k = a_k - Var(k_shift);
    // Padding keys (dropped by the attention) get exp(0): finite, whatever their values.
    if (padding.defined()) a_k = masked_fill(a_k, padding, 0.0);
    return {exp(a_q - Var(q_shift)) * norm, exp(a_k) * norm, q_shift, k_shift};
  }

  int64_t feature_dim(int64_t) const override { return num_features_; }
  std::string name() const override { return "performer"; }

 private:
  // x: [B, H, L, D] -> W x^ - |x^|^2 / 2: [B, H, L, m]
  Var exponent(const Var& x, const Tensor& w) const {
    const Var xs = x * std::pow(static_cast<double>(head_dim_), -0.25);  // [B, H, L, D]
    return matmul(xs, Var(w), false, true) - sum(xs * xs, {3}, true) * 0.5;
  }

  // A fresh W [m, D] on the CPU (opt.dtype).
  Tensor draw() {
    const int64_t m = num_features_, d = head_dim_;
    // Tensors, not host vectors: a num_features too large for memory meets the allocator.
    const Tensor w = Tensor::empty({m, d}, DType::f64);
    double* out = w.data<double>();
    for (int64_t start = 0; start < m; start += d) {
      // Gram-Schmidt (modified) on the rows of a Gaussian [D, D] block: orthonormal rows.
      std::vector<double> g = randn({d, d}, gen_, 0, 1, DType::f64).to_vector<double>();
      for (int64_t i = 0; i < d; ++i) {
        double* row = &g[i * d];
        for (int64_t j = 0; j < i; ++j) {
          const double* prev = &g[j * d];
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += row[c] * prev[c];
          for (int64_t c = 0; c < d; ++c) row[c] -= dot * prev[c];
        }
        double len = 0;
        for (int64_t c = 0; c < d; ++c) len += row[c] * row[c];
        for (int64_t c = 0; c < d; ++c) row[c] /= std::sqrt(len);
      }
      const int64_t rows = std::min(d, m - start);
      std::copy(g.begin(), g.begin() + rows * d, out + start * d);
    }
    // Row norms of a Gaussian [m, D]: chi(D), the lengths unstructured Gaussian rows would have.
    const Tensor gaussian = randn({m, d}, gen_, 0, 1, DType::f64);
    const double* lengths = gaussian.data<double>();
    for (int64_t r = 0; r < m; ++r) {
      double len = 0;
      for (int64_t c = 0; c < d; ++c) len += lengths[r * d + c] * lengths[r * d + c];
      for (int64_t c = 0; c < d; ++c) out[r * d + c] *= std::sqrt(len);
    }
    return w.to(dtype_);
  }

  int64_t num_features_;
  int64_t redraw_interval_;
  int64_t head_dim_;
  DType dtype_;
  Generator gen_;
  Tensor projection_;  // [m, D]
  int64_t calls_since_draw_ = 0;
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("performer", PerformerFeatureMap);

}  // namespace relpos
