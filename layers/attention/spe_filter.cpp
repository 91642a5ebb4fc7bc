// The parts of stochastic positional encoding shared by sinspe and convspe (spe_filter.h): the
// noise generators and options, the gated filter, the scale, and cos/sin with their derivatives.
#include "layers/attention/spe_filter.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "layers/init.h"

namespace relpos {

double spe_scale(int64_t realizations, int64_t head_dim) {
  return std::pow(static_cast<double>(realizations * head_dim), -0.25);
}

std::pair<Var, Var> spe_filter(const Var& q, const Var& k, const SpeCodes& codes, const Var& gate,
                               const Tensor& gate_noise) {
  const int64_t heads = q.size(1), dim = q.size(3);
  // x: [B, H, L, D], bar: [H, L, D, R] -> [B, H, L, R], one [B, D] x [D, R] product per (h, l).
  auto contract = [](const Var& x, const Var& bar) {
    Var y = matmul(permute(x, {1, 2, 0, 3}), bar);  // [H, L, B, R]
    return permute(y, {2, 0, 1, 3});                // [B, H, L, R]
  };
  if (!gate.defined()) return {contract(q, codes.qbar), contract(k, codes.kbar)};
  // sqrt(1 − σ(g)) = sqrt(σ(−g)): no cancellation for large g.
  const Var keep = reshape(sqrt(sigmoid(-gate)), {1, heads, 1, dim});     // [1, H, 1, D]
  const Var blend = reshape(sqrt(sigmoid(gate)), {1, heads, 1, dim});     // [1, H, 1, D]
  const Var noise(gate_noise);                                            // [H, D, R]
  Var q_hat = contract(q * keep, codes.qbar) + matmul(q * blend, noise);  // [B, H, Lq, R]
  Var k_hat = contract(k * keep, codes.kbar) + matmul(k * blend, noise);  // [B, H, Lk, R]
  return {q_hat, k_hat};
}

StochasticPositional::StochasticPositional(const AttentionOptions& opt, const char* component)
    : component_(component),
      heads_(opt.num_heads),
      head_dim_(opt.head_dim),
      realizations_(opt.options.get_size("num_realizations", 64)),
      train_gen_(fork_generator(opt.generator())) {
  const bool gated = opt.options.get<bool>("gated", true);
  const int64_t seed = opt.options.get<int64_t>("eval_seed", 0);
  register_generator("generator", train_gen_);
  RELPOS_CHECK(seed >= 0, component_, "eval_seed must be non-negative, got {}", seed);
  RELPOS_CHECK(heads_ > 0 && head_dim_ > 0, component_,
               "needs a positive number of heads and head dim, got {} and {}", heads_, head_dim_);
  eval_seed_ = static_cast<uint64_t>(seed);
  if (gated) {
    gate_ = Var(Tensor::empty({heads_, head_dim_}, opt.dtype), true);  // N(0, 1), as the reference
    normal_(gate_.value(), 0.0, 1.0, opt.generator());
    register_parameter("gate", gate_);
  }
}

Tensor StochasticPositional::draw_gate_noise(Generator& gen, DType dtype, Device device) const {
  return randn({heads_, head_dim_, realizations_}, gen, 0, spe_scale(realizations_, head_dim_),
               dtype, device);
}

std::pair<Var, Var> StochasticPositional::transform_qk(const Var& q, const Var& k,
                                                       const AttentionInputs& in) {
  RELPOS_CHECK(q.dim() == 4 && k.dim() == 4 && q.size(0) == k.size(0) && q.size(1) == heads_ &&
                   k.size(1) == heads_ && q.size(3) == head_dim_ && k.size(3) == head_dim_,
               component_, "q and k must be [batch, {}, length, {}], got q {} and k {}", heads_,
               head_dim_, q.value().str(), k.value().str());
  RELPOS_CHECK(q.device() == k.device(), component_, "q and k must be on one device");
  const int64_t q_len = q.size(2), k_len = k.size(2);
  check_lengths(q_len, k_len);
  // Positions: key j at j, query i at offset + i; codes for the span from the earliest to the
  // latest of them, counted from 0.
  const int64_t offset = in.query_offset(q_len, k_len);
  const int64_t first = std::min<int64_t>(0, offset);
  const int64_t len = std::max(k_len, offset + q_len) - first;
  Generator eval_gen(eval_seed_);
  Generator& gen = is_training() ? train_gen_ : eval_gen;
  const Tensor gate_noise =
      gate_.defined() ? draw_gate_noise(gen, q.dtype(), q.device()) : Tensor();
  const Tensor noise = draw_noise(len, gen, q.dtype(), q.device());
  SpeCodes c = codes(noise, len);                                     // [H, len, D, R] each
  c.qbar = slice(c.qbar, 1, offset - first, offset - first + q_len);  // [H, Lq, D, R]
  c.kbar = slice(c.kbar, 1, -first, k_len - first);                   // [H, Lk, D, R]
  return spe_filter(q, k, c, gate_, gate_noise);
}

}  // namespace relpos
