// CPU kernel of complex_mul: the positions (every index but the trailing (re, im) one) walked by
// for_each_run, each reading its pair at the operand's re address and re + (stride of the pair).
#include "core/backend.h"
#include "core/cpu/strided_loop.h"

namespace relpos::cpu {

namespace {

// (ar + i ai)(br + i bi), with bi negated for a * conj(b).
template <typename T, bool Conj>
void multiply_run(T* o, const T* a, const T* b, int64_t n, int64_t so, int64_t sa, int64_t sb,
                  int64_t pa, int64_t pb) {
  for (int64_t i = 0; i < n; ++i) {
    const T ar = a[i * sa], ai = a[i * sa + pa], br = b[i * sb];
    const T bi = Conj ? -b[i * sb + pb] : b[i * sb + pb];
    o[i * so] = ar * br - ai * bi;
    o[i * so + 1] = ar * bi + ai * br;
  }
}

// Interleaved pairs with unit pair strides and every operand advancing by one pair (the usual
// spectrum of rfft, or one broadcast along the run): fixed steps the compiler can vectorize.
template <typename T, bool Conj>
void multiply_pairs(T* o, const T* a, const T* b, int64_t n, int64_t sb) {
  if (sb == 0) {
    const T br = b[0], bi = Conj ? -b[1] : b[1];
    for (int64_t i = 0; i < n; ++i) {
      const T ar = a[2 * i], ai = a[2 * i + 1];
      o[2 * i] = ar * br - ai * bi;
      o[2 * i + 1] = ar * bi + ai * br;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i];
    const T bi = Conj ? -b[2 * i + 1] : b[2 * i + 1];
    o[2 * i] = ar * br - ai * bi;
    o[2 * i + 1] = ar * bi + ai * br;
  }
}

}  // namespace

void complex_mul(const Tensor& a, const Tensor& b, bool conj_b, const Tensor& out) {
  // a, b: [..., 2] expanded to out's shape; out: [..., 2] contiguous. Positions: [...].
  const Tensor out0 = out.select(-1, 0), a0 = a.select(-1, 0), b0 = b.select(-1, 0);
  const int64_t pa = a.stride(-1), pb = b.stride(-1);  // re -> im of one pair
  dispatch_floating(out.dtype(), "complex_mul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto run = [&]<bool Conj>() {
      const StridedLayout<3> L = make_layout<3>(out0.shape(), {&out0, &a0, &b0});
      for_each_run<3>(L, [&](const std::array<char*, 3>& p, int64_t n,
                             const std::array<int64_t, 3>& s) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T *pa_ = reinterpret_cast<const T*>(p[1]), *pb_ = reinterpret_cast<const T*>(p[2]);
        if (s[0] == 2 && s[1] == 2 && (s[2] == 2 || s[2] == 0) && pa == 1 && pb == 1)
          multiply_pairs<T, Conj>(o, pa_, pb_, n, s[2]);
        else
          multiply_run<T, Conj>(o, pa_, pb_, n, s[0], s[1], s[2], pa, pb);
      });
    };
    if (conj_b)
      run.template operator()<true>();
    else
      run.template operator()<false>();
  });
}

}  // namespace relpos::cpu
