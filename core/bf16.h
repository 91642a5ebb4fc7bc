// bfloat16: the upper 16 bits of an IEEE f32 (8 exponent bits, 7 mantissa bits), the storage type
// of DType::bf16 on both backends. f32 -> bf16 rounds to nearest, ties to even, as the GPUs'
// conversion instructions do (NaN stays a quiet NaN of the same sign; past the largest bf16 the
// result is infinity); bf16 -> f32 is exact. Arithmetic happens in f32: a bf16 converts to float
// implicitly, while a float becomes bf16 only explicitly (bf16(x)), so every rounding is visible.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace relpos {

RELPOS_HOST_DEVICE uint16_t bf16_bits_of(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  // Round to nearest even: add half an ulp of the kept bits, less one when the kept part is even.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

RELPOS_HOST_DEVICE float float_of_bf16_bits(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x = 0;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct bf16 {
  uint16_t bits;

  bf16() = default;
  RELPOS_HOST_DEVICE explicit bf16(float x) : bits(bf16_bits_of(x)) {}
  RELPOS_HOST_DEVICE operator float() const { return float_of_bf16_bits(bits); }  // NOLINT
};
static_assert(sizeof(bf16) == 2);

}  // namespace relpos
