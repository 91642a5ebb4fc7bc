// sinspe: sinusoidal stochastic positional encoding (Liutkus et al. 2021, §3 "sineSPE"). Per head
// and feature, K sinusoids with learned frequencies, query-side phase offsets and softplus gains
// mix R realizations of Gaussian noise into Q̄, K̄, whose cross-covariance is the stationary
// kernel P_d(m − n) = Σ_k γ_k² cos(ω_k (m − n) + φ_k) / 2K (times spe_scale²); spe_filter.h.
// Options: num_sines (K, default 10) besides those of StochasticPositional.
#include <cmath>
#include <numbers>

#include "autograd/functions.h"
#include "layers/attention/spe_filter.h"

namespace relpos {

SpeCodes sine_spe_codes(const Var& freqs, const Var& offsets, const Var& gains, const Tensor& noise,
                        int64_t len) {
  const int64_t dim = freqs.size(1), sines = freqs.size(2);
  const int64_t realizations = noise.size(3);
  const DType dtype = freqs.dtype();
  const Device device = freqs.device();
  const Var omega = sigmoid(freqs) * std::numbers::pi;  // [H, D, K]: 2π · σ(f) / 2 radians per step
  const Var positions(
      arange(0, static_cast<double>(len), 1, dtype, device).reshape({1, 1, 1, len}));
  const Var angle_k = unsqueeze(omega, 3) * positions;  // ω l: [H, D, K, len]
  const Var angle_q = angle_k + unsqueeze(offsets, 3);  // ω l + φ
  const Var cos_q = cos(angle_q), sin_q = sin(angle_q), cos_k = cos(angle_k), sin_k = sin(angle_k);

  // softplus(x) = −log σ(−x): exact gradient σ(x) (finite while σ(−x) does not underflow).
  const Var gamma = unsqueeze(-log(sigmoid(-gains)), 3);       // [H, D, K, 1]
  const Var mix = cat({gamma * Var(noise.slice(2, 0, sines)),  // [H, D, 2K, R]
                       gamma * Var(noise.slice(2, sines, 2 * sines))},
                      2) *
                  spe_scale(realizations, dim);
  auto code = [&](const Var& c, const Var& s) {   // [H, D, K, len] x2 -> [H, len, D, R]
    Var bar = matmul(cat({c, s}, 2), mix, true);  // [H, D, len, R]
    return contiguous(permute(bar, {0, 2, 1, 3}));
  };
  return {code(cos_q, sin_q), code(cos_k, sin_k)};
}

namespace {

constexpr const char* kName = "positional sinspe";

class SineSpe final : public StochasticPositional {
 public:
  explicit SineSpe(const AttentionOptions& opt)
      : StochasticPositional(opt, kName), sines_(opt.options.get_size("num_sines", 10)) {
    // As the reference: N(0, 1) draws; frequencies shifted by −4 (long periods first), gains
    // divided by sqrt(‖gains‖_K) / 2.
    const Shape shape{heads_, head_dim_, sines_};
    Generator& gen = opt.generator();
    freqs_ = Var(randn(shape, gen, -4.0, 1.0, opt.dtype), true);
    offsets_ = Var(randn(shape, gen, 0.0, 1.0, opt.dtype), true);
    const Tensor g = randn(shape, gen, 0.0, 1.0, opt.dtype);
    const Tensor root_norm = sqrt(sqrt(sum(mul(g, g), {2}, true)));  // [H, D, 1]
    gains_ = Var(mul_scalar(div(g, root_norm), 2.0), true);
    register_parameter("freqs", freqs_);
    register_parameter("offsets", offsets_);
    register_parameter("gains", gains_);
  }

  std::string name() const override { return "sinspe"; }

  Tensor draw_noise(int64_t, Generator& gen, DType dtype, Device device) const override {
    // [H, D, 2K, R], N(0, 1/2K) as the reference: the code variance does not grow with K.
    return randn({heads_, head_dim_, 2 * sines_, realizations_}, gen, 0,
                 1.0 / std::sqrt(2.0 * static_cast<double>(sines_)), dtype, device);
  }

  SpeCodes codes(const Tensor& noise, int64_t len) const override {
    return sine_spe_codes(freqs_, offsets_, gains_, noise, len);
  }

 private:
  int64_t sines_;
  Var freqs_, offsets_, gains_;  // [H, D, K] each
};

}  // namespace

RELPOS_REGISTER_POSITIONAL("sinspe", SineSpe);

}  // namespace relpos
