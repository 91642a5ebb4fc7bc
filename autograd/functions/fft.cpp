// rfft / irfft along the last dim, complex values as a trailing (re, im) pair. Both transforms
// are real-linear, so each backward is the other transform with per-bin weights.
//
// X = rfft(x, n), X_k = sum_j x_j e^{-2 pi i jk/n}, k = 0..n/2, with gradient G (re, im):
//   dL/dx_j = sum_k Re(G_k) cos(2 pi jk/n) - Im(G_k) sin(2 pi jk/n)
//           = Re(sum_k G_k e^{+2 pi i jk/n})
//           = n * irfft(G * w, n)_j,  w_k = 1 at k = 0 and (n even) k = n/2, 1/2 elsewhere,
// because irfft(Y, n)_j = (1/n) sum_k c_k Re(Y_k e^{2 pi i jk/n}) with c_k = 1/w_k (and it
// ignores Im Y_0, Im Y_{n/2}; we zero them so no backend has to). Then dx is truncated or
// zero-padded from n back to the input length L.
//
// y = irfft(X, n) with gradient g: y is linear in (Re X_k, Im X_k) with
//   dy_j/dRe X_k = (c_k/n) cos(2 pi jk/n),  dy_j/dIm X_k = -(c_k/n) sin(2 pi jk/n),
// so dX_k = (c_k/n) * rfft(g, n)_k, with zero for the ignored Im of bins 0 and (n even) n/2,
// zero for bins of X beyond n/2, and cut to X's bins when X had fewer than n/2 + 1.
//
// complex_mul, y = a * b with gradient g (re, im): as a real map of (re, im) pairs, the adjoint
// of multiplying by b is multiplying by conj(b), so da = g * conj(b) and db = g * conj(a). For
// y = a * conj(b): da = g * b and db = a * conj(g). Each is then summed to its input's shape.
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

namespace {

// [n/2 + 1, 2] per-bin (re, im) factors: `edge` at bin 0 and (n even) bin n/2, `interior`
// elsewhere; the imaginary factor of the edge bins is 0 (those parts carry no signal).
Tensor bin_factors(int64_t n, double interior, double edge, DType dtype, Device device) {
  const int64_t bins = n / 2 + 1;
  std::vector<double> f(2 * bins, interior);
  const auto set_edge = [&](int64_t k) {
    f[2 * k] = edge;
    f[2 * k + 1] = 0;
  };
  set_edge(0);
  if (n % 2 == 0) set_edge(n / 2);
  return to_device(cast(Tensor::from_vector(f, {bins, 2}), dtype), device);
}

}  // namespace

Var rfft(const Var& x, int64_t n) {
  const int64_t length = x.size(-1);  // x: [..., L]
  if (n == -1) n = length;
  Tensor out = rfft(x.value(), n);  // out: [..., n/2 + 1, 2]
  return make_result("rfft", out, {x}, [n, length](const Tensor& g) {
    const Tensor w = bin_factors(n, 0.5, 1.0, g.dtype(), g.device());
    Tensor dx = mul_scalar(irfft(mul(g, w), n), static_cast<double>(n));  // dx: [..., n]
    if (n > length) dx = dx.slice(-1, 0, length).contiguous();
    if (n < length) dx = pad(dx, {0, length - n});
    return std::vector<Tensor>{dx};
  });
}

Var irfft(const Var& X, int64_t n) {
  const int64_t bins = X.size(-2);  // X: [..., M, 2]
  if (n == -1) n = 2 * (bins - 1);
  Tensor out = irfft(X.value(), n);  // out: [..., n]
  return make_result("irfft", out, {X}, [n, bins](const Tensor& g) {
    const double scale = 1.0 / static_cast<double>(n);
    const Tensor w = bin_factors(n, 2 * scale, scale, g.dtype(), g.device());
    Tensor dX = mul(rfft(g, n), w);  // dX: [..., n/2 + 1, 2]
    const int64_t used = n / 2 + 1;
    if (bins < used) dX = dX.slice(-2, 0, bins).contiguous();
    if (bins > used) dX = pad(dX, {0, 0, 0, bins - used});
    return std::vector<Tensor>{dX};
  });
}

Var complex_mul(const Var& a, const Var& b, bool conj_b) {
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  return make_result("complex_mul", complex_mul(a.value(), b.value(), conj_b), {a, b},
                     [x = a.value(), y = b.value(), conj_b, ga, gb](const Tensor& g) {
                       Tensor da, db;
                       if (ga) da = sum_to(complex_mul(g, y, !conj_b), x.shape());
                       if (gb)
                         db = sum_to(conj_b ? complex_mul(x, g, true) : complex_mul(g, x, true),
                                     y.shape());
                       return std::vector<Tensor>{da, db};
                     });
}

}  // namespace relpos
