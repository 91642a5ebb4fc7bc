// Toeplitz products by zero-padded FFT and FastRPB's shared weights (layers/attention/toeplitz.h).
#include "layers/attention/toeplitz.h"

#include <cassert>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/shape.h"
#include "layers/attention/masks.h"

namespace relpos {

int64_t toeplitz_fft_size(int64_t n) {
  for (int64_t m = 2 * n - 1;; ++m) {
    int64_t rest = m;
    for (int64_t p : {2, 3, 5})
      while (rest % p == 0) rest /= p;
    if (rest == 1) return m;
  }
}

Var toeplitz_matvec(const Var& weights, const Var& x, bool causal) {
  RELPOS_CHECK(x.dim() == 4 && weights.dim() == 2 && weights.size(0) == x.size(1) &&
                   weights.size(1) == 2 * x.size(2) - 1,
               "toeplitz",
               "weights must be [heads, 2n - 1] for x [batch, heads, n, dim], got {} and {}",
               weights.value().str(), x.value().str());
  const int64_t heads = x.size(1), n = x.size(2), m = toeplitz_fft_size(n), bins = m / 2 + 1;
  // The circulant's first column c [H, m]: c[d] = w_d for d = 0..n-1 and c[m + d] = w_d for
  // d = -(n-1)..-1 (left zero when causal), zeros between. Then circ(c)[i, j] = c[(i - j) mod m]
  // is w_(i-j) for all |i - j| < n, and m >= 2n - 1 keeps the two ends from overlapping.
  const int64_t behind = causal ? 0 : n - 1;
  Var c = pad(slice(weights, 1, n - 1, 2 * n - 1), {0, m - n - behind});  // [H, m - behind]
  if (behind > 0) c = cat({c, slice(weights, 1, 0, n - 1)}, 1);           // [H, m]
  Var cf = reshape(rfft(c, m), {1, heads, 1, bins, 2});                   // [1, H, 1, F, 2]
  // x zero-padded to m along its length: the circular product is the linear one on rows < n.
  Var xf = rfft(transpose(x, 2, 3), m);                    // [B, H, D, F, 2]
  Var y = slice(irfft(complex_mul(xf, cf), m), -1, 0, n);  // [B, H, D, n]
  return transpose(y, 2, 3);                               // [B, H, n, D]
}

ToeplitzBiasOptions read_toeplitz_bias_options(const AttentionOptions& opt, const char* component) {
  const Options& options = opt.options;
  ToeplitzBiasOptions o;
  const auto param = options.get<std::string>("parameterization", "full");
  RELPOS_CHECK(param == "full" || param == "symmetric", component,
               "parameterization must be full or symmetric, got '{}'", param);
  o.symmetric = param == "symmetric";
  o.front = options.get_inherited<int64_t>("special_tokens_front", opt.special_front);
  o.back = options.get_inherited<int64_t>("special_tokens_back", opt.special_back);
  RELPOS_CHECK(o.front >= 0 && o.back >= 0, component,
               "special_tokens_front and special_tokens_back must be >= 0, got {} and {}", o.front,
               o.back);
  check_largest_size(component, "special_tokens_front", o.front);
  check_largest_size(component, "special_tokens_back", o.back);
  return o;
}

Tensor init_toeplitz_weights(bool symmetric, int64_t heads, int64_t n, DType dtype,
                             Generator& gen) {
  // Drawn in f64 and cast, so every dtype starts from the same values.
  const double first = symmetric ? 0.0 : -static_cast<double>(n - 1);
  const Tensor dist = abs(arange(first, static_cast<double>(n), 1, DType::f64)).reshape({1, -1});
  const Tensor slope = rand({heads, 1}, gen, 0, 1, DType::f64);    // [H, 1] u_h
  const Tensor offset = randn({heads, 1}, gen, 0, 1, DType::f64);  // [H, 1] z_h
  return cast(add(mul(dist, mul_scalar(slope, 1e-5)), mul_scalar(offset, 1e-6)), dtype);
}

Var central_toeplitz_weights(const Var& weights, bool symmetric, int64_t n) {
  if (!symmetric) {
    const int64_t center = (weights.size(1) - 1) / 2;  // the column of d = 0
    assert(n - 1 <= center);
    return slice(weights, 1, center - (n - 1), center + n);  // [H, 2n - 1]
  }
  assert(n <= weights.size(1));
  std::vector<int64_t> index;  // |d| for d = -(n-1)..n-1
  for (int64_t d = 1 - n; d < n; ++d) index.push_back(std::abs(d));
  return index_select(weights, 1, Tensor::from_vector(index, {2 * n - 1}, weights.device()));
}

Var toeplitz_content_values(const Var& v, const AttentionInputs& in,
                            const ToeplitzBiasOptions& options, const char* component) {
  const int64_t len = v.size(2);
  RELPOS_CHECK(len > options.front + options.back, component,
               "a sequence of {} tokens leaves no content token besides {} + {} special tokens",
               len, options.front, options.back);
  // [B, H, L, D], padding keys zeroed so they contribute nothing.
  Var kept = in.key_mask.defined() ? v * Var(key_keep_column(in.key_mask, v.dtype())) : v;
  return slice(kept, 2, options.front, len - options.back);  // [B, H, L - front - back, D]
}

}  // namespace relpos
