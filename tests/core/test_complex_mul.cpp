// complex_mul against the plain complex formula: f32 and f64, a * b and a * conj(b), broadcasting
// both ways (the FastRPB spectrum against a filter's), strided pairs, the threaded path, errors,
// and CUDA against the CPU.
#include <complex>

#include "tests/core/naive.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

// The product at `shape` from the broadcast values of a and b, pair by pair.
std::vector<double> naive_complex_mul(const Tensor& a, const Tensor& b, bool conj_b,
                                      const Shape& shape) {
  const std::vector<double> va = test::broadcast_values(a, shape),
                            vb = test::broadcast_values(b, shape);
  std::vector<double> out;
  for (size_t i = 0; i < va.size(); i += 2) {
    const std::complex<double> x(va[i], va[i + 1]), y(vb[i], vb[i + 1]);
    const std::complex<double> z = x * (conj_b ? std::conj(y) : y);
    out.push_back(z.real());
    out.push_back(z.imag());
  }
  return out;
}

// (a, b): equal shapes, the toeplitz case ([B, H, D, F, 2] by [1, H, 1, F, 2]), b broadcast
// along the run, a 1-D pair, odd sizes, and one large enough to run threaded.
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{3, 5, 2}, {3, 5, 2}}, {{2, 3, 4, 7, 2}, {1, 3, 1, 7, 2}},
    {{3, 7, 2}, {3, 1, 2}}, {{2}, {4, 5, 2}},
    {{1, 9, 2}, {5, 1, 2}}, {{300, 131, 2}, {131, 2}}};

}  // namespace

TEST_CASE("complex_mul: a * b and a * conj(b) match the complex formula with broadcasting") {
  for (DType dt : {DType::f32, DType::f64})
    for (bool conj_b : {false, true})
      for (const auto& [sa, sb] : kShapePairs) {
        RELPOS_INFO("{} conj {} {} {}", dtype_name(dt), conj_b, shape_str(sa), shape_str(sb));
        const Tensor a = test::random_tensor(sa, dt, 61, -2, 2);
        const Tensor b = test::random_tensor(sb, dt, 62, -2, 2);
        const Shape shape = broadcast_shapes(sa, sb, "test");
        const Tensor want =
            Tensor::from_vector(naive_complex_mul(a, b, conj_b, shape), shape).to(dt);
        const double rtol = dt == DType::f32 ? 1e-6 : 1e-14, atol = dt == DType::f32 ? 1e-6 : 1e-14;
        CHECK_CLOSE(complex_mul(a, b, conj_b), want, rtol, atol);
        // Strided operands: pairs 2 elements apart and permuted dims (the general path).
        CHECK_CLOSE(complex_mul(test::strided_copy(a), test::strided_copy(b), conj_b), want, rtol,
                    atol);
        CHECK(complex_mul(a, b, conj_b).dtype() == dt);
      }
}

TEST_CASE("complex_mul: empty tensors, and errors name the op and the operands") {
  CHECK(complex_mul(zeros({0, 3, 2}), zeros({3, 2})).shape() == Shape{0, 3, 2});
  CHECK_THROWS_WITH_AS(complex_mul(zeros({3, 3}), zeros({3, 2})),
                       doctest::Contains("[complex_mul] expects complex tensors [..., 2]"), Error);
  CHECK_THROWS_WITH_AS(complex_mul(zeros({4, 2}), zeros({3, 2})),
                       doctest::Contains("[complex_mul]"), Error);
  CHECK_THROWS_WITH_AS(complex_mul(zeros({3, 2}, DType::i64), zeros({3, 2}, DType::i64)),
                       doctest::Contains("[complex_mul] expects a floating tensor"), Error);
  CHECK_THROWS_WITH_AS(complex_mul(zeros({3, 2}), zeros({3, 2}, DType::f64)),
                       doctest::Contains("[complex_mul]"), Error);
}

TEST_CASE("complex_mul: CUDA matches CPU, broadcast and strided, with and without conj") {
  const Tensor a = test::random_tensor({2, 3, 4, 7, 2}, DType::f32, 63);
  const Tensor b = test::random_tensor({1, 3, 1, 7, 2}, DType::f32, 64);
  test::check_cuda_matches_cpu("complex_mul",
                               [](const std::vector<Tensor>& in) {
                                 return std::vector{
                                     complex_mul(in[0], in[1]), complex_mul(in[0], in[1], true),
                                     complex_mul(test::strided_copy(in[0]), in[1], true)};
                               },
                               {a, b});
}
