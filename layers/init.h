// Parameter initializers equal in distribution to torch.nn.init and the torch.nn layer defaults,
// drawn from a relpos::Generator (Philox), so a seed gives the same weights on every device.
// Each fills an existing tensor in place (its shape, dtype and device are kept).
#pragma once

#include <cstdint>
#include <utility>

#include "core/generator.h"
#include "core/tensor.h"

namespace relpos {

// The process-wide generator layers draw from when none is passed (as torch's global RNG);
// manual_seed resets it.
Generator& default_generator();
void manual_seed(uint64_t seed);
// A new generator with its own stream, seeded from `parent` (advancing it), for modules that
// draw during forward (dropout) and should not share a stream with anyone.
Generator fork_generator(Generator& parent);

// (fan_in, fan_out) of a weight [out, in, *receptive] as torch computes them.
std::pair<int64_t, int64_t> fan_in_out(const Tensor& w);

void uniform_(const Tensor& t, double bound, Generator& gen);  // U(-bound, bound)
void normal_(const Tensor& t, double mean, double std, Generator& gen);
void constant_(const Tensor& t, double value);

// torch.nn.init.kaiming_uniform_(w, a) for leaky_relu: bound = sqrt(6 / ((1 + a^2) fan_in)).
// With a = sqrt(5) (torch.nn.Linear's default) the bound is 1 / sqrt(fan_in).
void kaiming_uniform_(const Tensor& w, double a, Generator& gen);
// torch.nn.init.xavier_uniform_: bound = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& w, Generator& gen, double gain = 1.0);

// torch.nn.Linear.reset_parameters: weight [out, in] kaiming_uniform(a = sqrt(5)), bias [out]
// U(-1/sqrt(in), 1/sqrt(in)).
void linear_weight_(const Tensor& w, Generator& gen);
void linear_bias_(const Tensor& b, int64_t fan_in, Generator& gen);

}  // namespace relpos
