// torch-equivalent initializers (layers/init.h).
#include "layers/init.h"

#include <cmath>

#include "core/ops.h"

namespace relpos {

Generator& default_generator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(uint64_t seed) {
  default_generator().set_state(seed, 0);
}

Generator fork_generator(Generator& parent) {
  // splitmix64 of (seed, offset): distinct, well-mixed seeds for consecutive forks.
  uint64_t z = parent.seed() ^ (parent.reserve(1) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return Generator(z ^ (z >> 31));
}

std::pair<int64_t, int64_t> fan_in_out(const Tensor& w) {
  RELPOS_CHECK(w.dim() >= 2, "init", "fan in/out need a weight of at least 2 dims, got {}",
               w.str());
  int64_t receptive = 1;
  for (int d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}

void uniform_(const Tensor& t, double bound, Generator& gen) {
  copy_(t, rand(t.shape(), gen, -bound, bound, t.dtype(), t.device()));
}

void normal_(const Tensor& t, double mean, double std, Generator& gen) {
  copy_(t, randn(t.shape(), gen, mean, std, t.dtype(), t.device()));
}

void constant_(const Tensor& t, double value) {
  fill_(t, value);
}

void kaiming_uniform_(const Tensor& w, double a, Generator& gen) {
  const auto [fan_in, fan_out] = fan_in_out(w);
  RELPOS_CHECK(fan_in > 0, "init", "kaiming_uniform_ on an empty weight {}", w.str());
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  uniform_(w, gain * std::sqrt(3.0 / static_cast<double>(fan_in)), gen);
}

void xavier_uniform_(const Tensor& w, Generator& gen, double gain) {
  const auto [fan_in, fan_out] = fan_in_out(w);
  RELPOS_CHECK(fan_in + fan_out > 0, "init", "xavier_uniform_ on an empty weight {}", w.str());
  uniform_(w, gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)), gen);
}

void linear_weight_(const Tensor& w, Generator& gen) {
  kaiming_uniform_(w, std::sqrt(5.0), gen);
}

void linear_bias_(const Tensor& b, int64_t fan_in, Generator& gen) {
  uniform_(b, fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0, gen);
}

}  // namespace relpos
