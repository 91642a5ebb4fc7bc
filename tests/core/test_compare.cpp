// Comparisons (u8 masks), where and masked_fill against plain-loop references: ties, NaN,
// broadcasting of every operand, strided inputs, float and integer dtypes, errors.
#include <cmath>
#include <functional>
#include <limits>

#include "tests/core/naive.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

struct CompareCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<bool(double, double)> ref;
};

std::vector<CompareCase> compare_cases() {
  using T = const Tensor&;
  return {
      {"eq", [](T a, T b) { return eq(a, b); }, [](double a, double b) { return a == b; }},
      {"ne", [](T a, T b) { return ne(a, b); }, [](double a, double b) { return a != b; }},
      {"lt", [](T a, T b) { return lt(a, b); }, [](double a, double b) { return a < b; }},
      {"le", [](T a, T b) { return le(a, b); }, [](double a, double b) { return a <= b; }},
      {"gt", [](T a, T b) { return gt(a, b); }, [](double a, double b) { return a > b; }},
      {"ge", [](T a, T b) { return ge(a, b); }, [](double a, double b) { return a >= b; }},
  };
}

}  // namespace

TEST_CASE("compare: eq/ne/lt/le/gt/ge give u8 masks equal to the naive comparison, with ties") {
  for (const CompareCase& c : compare_cases())
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8}) {
      INFO(c.name << " " << dtype_name(dt));
      // Values in {0, 1, 2, 3}, so about a quarter of the pairs tie.
      const Tensor a = cast(test::random_indices({5, 1, 3}, 4, 61), dt);
      const Tensor b = cast(test::random_indices({4, 1}, 4, 62), dt);
      const std::vector<double> va = test::broadcast_values(a, {5, 4, 3}),
                                vb = test::broadcast_values(b, {5, 4, 3});
      std::vector<uint8_t> want;
      for (size_t i = 0; i < va.size(); ++i) want.push_back(c.ref(va[i], vb[i]) ? 1 : 0);
      const Tensor m = c.op(a, b);
      CHECK(m.dtype() == DType::u8);
      CHECK(m.shape() == Shape{5, 4, 3});
      CHECK(m.to_vector<uint8_t>() == want);
      CHECK(c.op(test::strided_copy(a), test::strided_copy(b)).to_vector<uint8_t>() == want);
    }
}

TEST_CASE("compare: NaN compares unequal to everything, itself included") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = Tensor::from_vector<float>({float(nan), float(nan), 1.f}, {3});
  const Tensor b = Tensor::from_vector<float>({float(nan), 1.f, float(nan)}, {3});
  CHECK(eq(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0});
  CHECK(ne(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{1, 1, 1});
  CHECK(le(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0});
  CHECK(gt(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 0});
}

TEST_CASE("where: picks a where cond is set and b elsewhere, all three broadcast, strided") {
  for (DType dt : {DType::f32, DType::f64, DType::i64}) {
    INFO(dtype_name(dt));
    const Tensor cond = cast(test::random_indices({5, 1, 3}, 2, 71), DType::u8);
    const Tensor a = cast(test::random_tensor({4, 1}, DType::f64, 72, -50, 50), dt);
    const Tensor b = cast(test::random_tensor({3}, DType::f64, 73, -50, 50), dt);
    const Shape shape = {5, 4, 3};
    const std::vector<double> vc = test::broadcast_values(cond, shape),
                              va = test::broadcast_values(a, shape),
                              vb = test::broadcast_values(b, shape);
    std::vector<double> want;
    for (size_t i = 0; i < vc.size(); ++i) want.push_back(vc[i] != 0 ? va[i] : vb[i]);
    const Tensor y = where(cond, a, b);
    CHECK(y.dtype() == dt);
    CHECK(y.to_vector<double>() == want);  // a selection: exact
    const Tensor ys = where(test::strided_copy(cond), test::strided_copy(a), test::strided_copy(b));
    CHECK(ys.to_vector<double>() == want);
  }
  // A large case runs threaded.
  const Tensor cond = cast(test::random_indices({301, 129}, 2, 74), DType::u8);
  const Tensor a = test::random_tensor({301, 129}, DType::f32, 75), b = zeros({129});
  const std::vector<double> vc = cond.to_vector<double>(), va = a.to_vector<double>();
  const std::vector<double> y = where(cond, a, b).to_vector<double>();
  size_t wrong = 0;
  for (size_t i = 0; i < y.size(); ++i) wrong += y[i] != (vc[i] != 0 ? va[i] : 0.0);
  CHECK(wrong == 0);
}

TEST_CASE("masked_fill: writes value where the broadcast mask is set, x unchanged elsewhere") {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& mshape : {Shape{1, 7}, Shape{5, 1}, Shape{5, 7}, Shape{7}}) {
      INFO(dtype_name(dt) << " mask " << shape_str(mshape));
      const Tensor x = test::random_tensor({5, 7}, dt, 81);
      const Tensor mask = cast(test::random_indices(mshape, 2, 82), DType::u8);
      const std::vector<double> vx = x.to_vector<double>(),
                                vm = test::broadcast_values(mask, {5, 7});
      std::vector<double> want;
      for (size_t i = 0; i < vx.size(); ++i) want.push_back(vm[i] != 0 ? -inf : vx[i]);
      CHECK(masked_fill(x, mask, -inf).to_vector<double>() == want);
      CHECK(masked_fill(test::strided_copy(x), mask, -inf).to_vector<double>() == want);
    }
  }
  const Tensor xi = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  const Tensor m = Tensor::from_vector<uint8_t>({1, 0, 1}, {3});
  CHECK(masked_fill(xi, m, -4).to_vector<int64_t>() == std::vector<int64_t>{-4, 2, -4});
}

TEST_CASE("compare/where/masked_fill: errors name the op and the offending shapes or dtypes") {
  const Tensor a = zeros({2, 3}), mask = zeros({2, 3}, DType::u8);
  CHECK_THROWS_WITH_AS(lt(a, zeros({4})),
                       doctest::Contains("[lt] shapes [2, 3] and [4] do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(eq(a, zeros({2, 3}, DType::i64)), doctest::Contains("[eq] dtypes differ"),
                       Error);
  CHECK_THROWS_WITH_AS(where(a, a, a), doctest::Contains("[where] the condition/mask must be u8"),
                       Error);
  CHECK_THROWS_WITH_AS(where(mask, a, zeros({2, 3}, DType::f64)),
                       doctest::Contains("[where] dtypes differ"), Error);
  CHECK_THROWS_WITH_AS(where(zeros({5}, DType::u8), a, a),
                       doctest::Contains("[where] shapes [5] and [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(masked_fill(a, zeros({4, 2, 3}, DType::u8), 0),
                       doctest::Contains("[masked_fill] mask u8[4, 2, 3] cpu does not broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(masked_fill(a, a, 0), doctest::Contains("[masked_fill]"), Error);
  CHECK_THROWS_WITH_AS(masked_fill(zeros({2, 3}, DType::i32), mask, 0.5),
                       doctest::Contains("[masked_fill] value 0.5 cannot be stored"), Error);
  if (cuda_available()) {
    CHECK_THROWS_WITH_AS(gt(a, a.to(Device::cuda(0))),
                         doctest::Contains("[gt] tensors are on different devices"), Error);
  } else {
    MESSAGE("SKIPPED (no CUDA device): the device-mismatch error of comparisons");
  }
}

TEST_CASE("compare/where/masked_fill: CUDA matches CPU") {
  const Tensor a = cast(test::random_indices({5, 1, 3}, 4, 91), DType::f32);
  const Tensor b = cast(test::random_indices({4, 1}, 4, 92), DType::f32);
  const double exact = 1e-30;  // masks and selections must agree exactly (atol > 0 avoids 0/0)
  for (const CompareCase& c : compare_cases())
    test::check_cuda_matches_cpu(
        c.name,
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.op(in[0], in[1])}; },
        {a, b}, 0, exact);
  const Tensor cond = cast(test::random_indices({5, 1, 3}, 2, 93), DType::u8);
  test::check_cuda_matches_cpu(
      "where",
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{where(in[0], in[1], in[2])}; },
      {cond, a, b}, 0, exact);
  test::check_cuda_matches_cpu(
      "masked_fill",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{masked_fill(in[0], in[1], -1e9)};
      },
      {test::random_tensor({5, 4, 3}, DType::f32, 94), cond}, 0, exact);
}
