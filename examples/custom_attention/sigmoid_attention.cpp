// sigmoid attention (Ramapuram et al. 2024, "Theory, Analysis, and Best Practices for Sigmoid
// Self-Attention", eq. 2): Y = sigmoid(Q·Kᵀ/sqrt(D) + b) V with b = -log(n), n the layer's
// max_len (the keys of this call when it is not known), unless the option `bias` sets it. A fixed
// n keeps a token's output the same however a stream is cut into segments. Each weight stands
// alone (no normalization over keys); blocked pairs weigh 0.
#include <cmath>

#include "autograd/functions.h"
#include "layers/attention/attention.h"
#include "layers/attention/masks.h"

namespace relpos {
namespace {

class SigmoidAttention final : public Attention {
 public:
  explicit SigmoidAttention(const AttentionOptions& opt)
      : bias_(opt.options.get<double>(
            "bias", opt.max_len > 0 ? -std::log(static_cast<double>(opt.max_len)) : NAN)) {}

  // q: [B, H, Lq, D], k: [B, H, Lk, D], v: [B, H, Lk, Dv] -> [B, H, Lq, Dv]
  Var forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) override {
    const AttentionDims d = check_attention_inputs("attention sigmoid", q, k, v, in);
    const double b = std::isnan(bias_) ? -std::log(static_cast<double>(d.k_len)) : bias_;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
    Var weights = sigmoid(matmul(q, k, false, true) * scale + b);  // [B, H, Lq, Lk]
    const Tensor blocked = blocked_pairs(in, d.q_len, d.k_len, q.device());
    if (blocked.defined()) weights = masked_fill(weights, blocked, 0.0);
    return matmul(weights, v);
  }

  // No positional hooks: an encoding that needs a score bias or kernel terms is refused.
  AttentionCaps caps() const override { return {}; }
  std::string name() const override { return "sigmoid"; }

 private:
  double bias_;  // NaN: -log(Lk) of each call
};

}  // namespace

RELPOS_REGISTER_ATTENTION("sigmoid", SigmoidAttention);

}  // namespace relpos
