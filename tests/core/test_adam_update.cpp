// adam_update (core/ops.h): the fused pass has the bits of the same formula computed op by op (the
// optimizer's former composed form, kept here as the twin), equals Adam's formula in f64, leaves
// its inputs alone, refuses what it cannot update, and CUDA has the CPU's bits.
#include <cmath>
#include <limits>

#include "tests/harness.h"

using namespace relpos;

namespace {

// The op-by-op form: thirteen elementwise ops in the order of core/ops.h adam_update.
AdamUpdate composed_adam(Tensor p, Tensor g, const Tensor& m, const Tensor& v,
                         const AdamCoefficients& c) {
  if (c.weight_decay != 0) {
    if (c.decoupled)
      p = mul_scalar(p, 1 - c.lr * c.weight_decay);
    else
      g = add(g, mul_scalar(p, c.weight_decay));
  }
  const Tensor m1 = add(mul_scalar(m, c.beta1), mul_scalar(g, 1 - c.beta1));
  const Tensor v1 = add(mul_scalar(v, c.beta2), mul_scalar(mul(g, g), 1 - c.beta2));
  const double bias1 = 1 - std::pow(c.beta1, c.step), bias2 = 1 - std::pow(c.beta2, c.step);
  const Tensor denom = add_scalar(mul_scalar(sqrt(v1), 1 / std::sqrt(bias2)), c.eps);
  return {sub(p, mul_scalar(div(m1, denom), c.lr / bias1)), m1, v1};
}

struct Inputs {
  Tensor p, g, m, v;
};

// Odd sizes: one below a CPU task's block, one over several blocks and the threading threshold.
Inputs random_inputs(const Shape& shape, DType dtype, uint64_t seed) {
  return {test::random_tensor(shape, dtype, seed, -2, 2),
          test::random_tensor(shape, dtype, seed + 1, -3, 3),
          test::random_tensor(shape, dtype, seed + 2, -0.5, 0.5),
          test::random_tensor(shape, dtype, seed + 3, 0, 2)};
}

// Adam (AdamCoefficients' variants): plain, L2, decoupled, LRA's betas and ε, a late step.
std::vector<AdamCoefficients> variants() {
  return {{1e-3, 0.9, 0.999, 1e-8, 0, false, 1},
          {3e-3, 0.9, 0.999, 1e-8, 0.01, false, 2},
          {1e-2, 0.9, 0.999, 1e-8, 0.1, true, 7},
          {5e-4, 0.9, 0.98, 1e-9, 0.1, true, 1000},
          {2e-3, 0.8, 0.99, 1e-6, 0.05, true, 3.0}};
}

}  // namespace

TEST_CASE("adam_update: the bits of the op-by-op formula, f32 and f64, every variant") {
  for (DType dtype : {DType::f32, DType::f64})
    for (const Shape& shape : {Shape{7}, Shape{3, 16384 * 3 + 5}})
      for (const AdamCoefficients& c : variants()) {
        RELPOS_INFO("{} {} lr {} wd {} decoupled {} step {}", dtype_name(dtype), shape_str(shape),
                    c.lr, c.weight_decay, c.decoupled, c.step);
        const Inputs in = random_inputs(shape, dtype, 40 + shape.size());
        const AdamUpdate got = adam_update(in.p, in.g, in.m, in.v, c);
        const AdamUpdate want = composed_adam(in.p, in.g, in.m, in.v, c);
        CHECK(test::same_bits(got.param, want.param));
        CHECK(test::same_bits(got.exp_avg, want.exp_avg));
        CHECK(test::same_bits(got.exp_avg_sq, want.exp_avg_sq));
      }
}

TEST_CASE("adam_update: Adam's formula in f64; inputs unchanged; strided inputs") {
  const Inputs in = random_inputs({5, 9}, DType::f64, 90);
  const Tensor p0 = in.p.clone(), m0 = in.m.clone();
  const AdamCoefficients c{1e-2, 0.9, 0.999, 1e-8, 0.1, true, 4};
  const AdamUpdate got = adam_update(in.p, in.g, in.m, in.v, c);
  const auto p = in.p.to_vector<double>(), g = in.g.to_vector<double>();
  const auto m = in.m.to_vector<double>(), v = in.v.to_vector<double>();
  const auto p1 = got.param.to_vector<double>(), m1 = got.exp_avg.to_vector<double>();
  const auto v1 = got.exp_avg_sq.to_vector<double>();
  for (size_t i = 0; i < p.size(); ++i) {
    const double mi = 0.9 * m[i] + 0.1 * g[i], vi = 0.999 * v[i] + 0.001 * g[i] * g[i];
    const double m_hat = mi / (1 - std::pow(0.9, 4)), v_hat = vi / (1 - std::pow(0.999, 4));
    const double pi = p[i] * (1 - 1e-2 * 0.1) - 1e-2 * m_hat / (std::sqrt(v_hat) + 1e-8);
    CHECK(m1[i] == doctest::Approx(mi).epsilon(1e-14));
    CHECK(v1[i] == doctest::Approx(vi).epsilon(1e-14));
    CHECK(p1[i] == doctest::Approx(pi).epsilon(1e-12));
  }
  CHECK(test::same_bits(in.p, p0));
  CHECK(test::same_bits(in.m, m0));
  const AdamUpdate strided = adam_update(test::strided_copy(in.p), test::strided_copy(in.g),
                                         test::strided_copy(in.m), test::strided_copy(in.v), c);
  CHECK(test::same_bits(strided.param, got.param));
  CHECK(test::same_bits(strided.exp_avg_sq, got.exp_avg_sq));
}

TEST_CASE("adam_update: overflowing squares and zero moments as the op-by-op formula") {
  // g² overflows f32 (v' = inf: the parameter stays), g = 0 on zero moments (0 / ε), t = 1.
  const Tensor p = test::random_tensor({6}, DType::f32, 95);
  const Tensor g = Tensor::from_vector<float>({1e20f, -1e25f, 0, 0, 3, -4}, {6});
  const Tensor m = zeros({6}), v = zeros({6});
  const AdamCoefficients c{1e-3, 0.9, 0.999, 1e-8, 0.01, false, 1};
  const AdamUpdate got = adam_update(p, g, m, v, c);
  const AdamUpdate want = composed_adam(p, g, m, v, c);
  CHECK(test::same_bits(got.param, want.param));
  CHECK(test::same_bits(got.exp_avg_sq, want.exp_avg_sq));
  CHECK(std::isinf(got.exp_avg_sq.to_vector<float>()[0]));
}

TEST_CASE("adam_update: refusals name the op and the cause") {
  const Tensor p = zeros({3}), g = zeros({3});
  const AdamCoefficients c;
  auto error = [&](const Tensor& pp, const Tensor& gg, const Tensor& mm, const Tensor& vv,
                   const AdamCoefficients& cc) {
    return test::error_of([&] { adam_update(pp, gg, mm, vv, cc); });
  };
  CHECK(error(p, zeros({4}), p, p, c).find("does not match the parameter's") != std::string::npos);
  CHECK(error(p, zeros({3}, DType::f64), p, p, c).find("adam_update") != std::string::npos);
  CHECK(error(zeros({3}, DType::i64), zeros({3}, DType::i64), zeros({3}, DType::i64),
              zeros({3}, DType::i64), c)
            .find("expects f32 or f64 parameters, got i64") != std::string::npos);
  const Tensor b = zeros({3}, DType::bf16);
  CHECK(error(b, b, b, b, c).find("expects f32 or f64 parameters, got bf16") != std::string::npos);
  AdamCoefficients bad = c;
  bad.step = 0;
  CHECK(error(p, g, p, p, bad).find("coefficients out of range") != std::string::npos);
  bad = c;
  bad.beta1 = 1;
  CHECK(error(p, g, p, p, bad).find("betas (1, 0.999)") != std::string::npos);
  bad = c;
  bad.lr = std::numeric_limits<double>::quiet_NaN();
  CHECK(error(p, g, p, p, bad).find("lr nan") != std::string::npos);
}

TEST_CASE("adam_update: CUDA has the CPU's bits") {
  using V = std::vector<Tensor>;
  for (DType dtype : {DType::f32, DType::f64})
    for (const AdamCoefficients& c : variants()) {
      const Inputs in = random_inputs({3, 1001}, dtype, 120);
      test::check_cuda_matches_cpu(
          "adam_update",
          [c](const V& x) {
            const AdamUpdate u = adam_update(x[0], x[1], x[2], x[3], c);
            return V{u.param, u.exp_avg, u.exp_avg_sq};
          },
          {in.p, in.g, in.m, in.v}, 0, 0);
    }
}
