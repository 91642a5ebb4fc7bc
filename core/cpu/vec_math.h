// Branch-free float math for CPU loops that GCC vectorizes under `#pragma omp simd`. Float
// compares block vectorization (they may trap), so selects and maxima work on the bit patterns:
// exp for f32 is a Cephes-style polynomial (2^n * p(r), |r| <= ln2/2, about 1 ulp), the normal
// CDF (GELU) builds on it, and max uses an order-preserving integer key. f64 falls back to std::exp
// (not a hot path). RELPOS_SIMD_CLONES marks hot row kernels for an extra AVX2+FMA build chosen at
// load time.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// GCC on x86-64 compiles a marked function twice (x86-64-v3 = AVX2+FMA, and the baseline) and
// picks one at load time from the CPU's features; elsewhere it is an ordinary function.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RELPOS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RELPOS_SIMD_CLONES
#endif

// The polynomials below must be inlined into the loops that call them: an outlined call (GCC
// outlines exp_f32 once a function calls it three times) stops vectorization.
#if defined(__GNUC__)
#define RELPOS_VEC_INLINE inline __attribute__((always_inline))
#else
#define RELPOS_VEC_INLINE inline
#endif

namespace relpos::cpu {

// c ? a : b on the bits, so no float compare or branch is involved.
RELPOS_VEC_INLINE float select_bits(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((m & std::bit_cast<uint32_t>(a)) | (~m & std::bit_cast<uint32_t>(b)));
}

// exp(x) for f32 without libm calls, within 2 ulp of the exact value. Below ln(2^-126) = -87.34
// the result is 0 (no denormals); above 88.376 (just short of ln(FLT_MAX) = 88.72) it is +inf.
// -inf gives 0, NaN stays NaN. Softmax-style callers only pass x <= 0.
RELPOS_VEC_INLINE float exp_f32(float x) {
  constexpr float kLo = -87.3365447f;       // ln(2^-126): the smallest normal result
  constexpr float kHi = 88.3762626647949f;  // keeps n <= 127 below
  constexpr float kRound = 12582912.0f;     // 1.5 * 2^23: adding it rounds to an integer
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const bool not_nan = (u & 0x7fffffffu) <= 0x7f800000u;
  const bool below = not_nan & (u > std::bit_cast<uint32_t>(kLo));  // negative, |x| > |kLo|
  const bool above = not_nan & (static_cast<int32_t>(u) > std::bit_cast<int32_t>(kHi));
  const float xc = select_bits(below, kLo, select_bits(above, kHi, x));
  const float t = xc * 1.44269504088896341f + kRound;  // n = round(x / ln2), in t's low bits
  const float n = t - kRound;
  const uint32_t n_bits = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kRound);
  float r = xc - n * 0.693359375f;  // x - n ln2, with ln2 split in two for accuracy
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float y = p * std::bit_cast<float>((n_bits + 127u) << 23);  // p * 2^n
  return select_bits(below, 0.0f, select_bits(above, std::numeric_limits<float>::infinity(), y));
}

// expm1(x) for f32 without libm calls. Where |x| >= 1/4 it is exp_f32(x) - 1 (a few ulp of the
// result). Below that, where exp - 1 would cancel, it is the Taylor polynomial to x^7, whose
// truncation error is under 2e-9 of the result.
RELPOS_VEC_INLINE float expm1_f32(float x) {
  float p = 1.0f / 5040;
  p = p * x + 1.0f / 720;
  p = p * x + 1.0f / 120;
  p = p * x + 1.0f / 24;
  p = p * x + 1.0f / 6;
  p = p * x + 0.5f;
  p = (p * x + 1.0f) * x;
  const bool small = (std::bit_cast<uint32_t>(x) & 0x7fffffffu) < std::bit_cast<uint32_t>(0.25f);
  return select_bits(small, p, exp_f32(x) - 1.0f);
}

// The standard normal CDF Phi(x) = erfc(-x/sqrt2)/2 for f32 without libm calls. erfc(z), z >= 0,
// is the Chebyshev fit of Numerical Recipes' erfcc (fractional error < 1.2e-7):
//   erfc(z) = t exp(-z^2 + P(t)),  t = 1 / (1 + z/2).
// exp(-z^2) is exp(-zh^2) exp(-(z-zh)(z+zh)) with zh = z cut to 12 mantissa bits, so zh^2 is
// exact and large arguments lose nothing to rounding; Phi(x) for x < 0 then keeps its relative
// accuracy far into the tail. Within 5e-7 relative of the exact Phi at the same rounded |x|/sqrt2.
RELPOS_VEC_INLINE float normal_cdf_f32(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  // z = |x|/sqrt2, held at 10 (erfc(10) = 2e-45 rounds to 0) so that z = inf gives no inf - inf.
  const float z_abs = std::bit_cast<float>(u & 0x7fffffffu) * 0.70710678118654752f;
  const uint32_t z_bits = std::bit_cast<uint32_t>(z_abs);
  const float z = select_bits((z_bits > std::bit_cast<uint32_t>(10.0f)) & (z_bits <= 0x7f800000u),
                              10.0f, z_abs);
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float zh = std::bit_cast<float>(std::bit_cast<uint32_t>(z) & 0xfffff000u);
  const float half_erfc = 0.5f * t * exp_f32(-zh * zh) * exp_f32((zh - z) * (zh + z) + p);
  return select_bits((u >> 31) != 0, half_erfc, 1.0f - half_erfc);  // sign bit: Phi(-|x|)
}

// x > 0 for f32 on the bits (sign clear, not +0; a NaN with the sign clear counts as positive).
RELPOS_VEC_INLINE bool positive_bits(float x) {
  return std::bit_cast<int32_t>(x) > 0;
}

template <typename T>
inline T exp_fast(T x) {
  if constexpr (std::is_same_v<T, float>)
    return exp_f32(x);
  else
    return std::exp(x);
}

// An integer key with the order of the floats: key(a) < key(b) iff a < b (-0 < +0). A NaN with
// the sign bit clear sorts above +inf, one with it set below -inf. The map is its own inverse.
template <typename T>
using OrderKey = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

template <typename T>
inline OrderKey<T> order_key(T x) {
  using K = OrderKey<T>;
  const K u = std::bit_cast<K>(x);
  return u ^ ((u >> (8 * sizeof(K) - 1)) & std::numeric_limits<K>::max());
}

template <typename T>
inline T from_order_key(OrderKey<T> k) {
  using K = OrderKey<T>;
  return std::bit_cast<T>(
      static_cast<K>(k ^ ((k >> (8 * sizeof(K) - 1)) & std::numeric_limits<K>::max())));
}

// max of x[0..n) (n >= 1), vectorized through the integer keys.
template <typename T>
inline T max_of(const T* x, int64_t n) {
  OrderKey<T> k = std::numeric_limits<OrderKey<T>>::min();
#pragma omp simd reduction(max : k)
  for (int64_t i = 0; i < n; ++i) k = k > order_key(x[i]) ? k : order_key(x[i]);
  return from_order_key<T>(k);
}

}  // namespace relpos::cpu
