// all_finite and allclose: NaN/Inf anywhere (threaded path, strided views), integer tensors,
// tolerances relative to the second operand, shape mismatches.
#include <cmath>
#include <limits>

#include "tests/harness.h"

using namespace relpos;

TEST_CASE("all_finite: false for one NaN or Inf anywhere, true otherwise, integers always") {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    const Tensor x = test::random_tensor({301, 257}, dt, 151);  // large: the threaded path
    CHECK(all_finite(x));
    CHECK(all_finite(test::strided_copy(x)));
    for (double bad : {nan, inf, -inf})
      for (int64_t at : {int64_t{0}, int64_t{301 * 257 - 1}, int64_t{40000}}) {
        INFO("value " << bad << " at " << at);
        const Tensor y = x.clone();
        copy_(y.reshape({-1}).slice(0, at, at + 1), Tensor::scalar(bad, DType::f64));
        CHECK_FALSE(all_finite(y));
        CHECK_FALSE(all_finite(test::strided_copy(y)));
      }
  }
  CHECK(all_finite(Tensor::from_vector<int64_t>({1, -5}, {2})));
  CHECK(all_finite(zeros({0})));
  CHECK_THROWS_WITH_AS(all_finite(Tensor()), doctest::Contains("[all_finite]"), Error);
}

TEST_CASE("allclose: |a - b| <= atol + rtol |b| everywhere, same shape; NaN never close") {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor b = Tensor::from_vector<double>({1, -100, 0, inf}, {4});
  CHECK(allclose(b, b));
  CHECK(allclose(Tensor::from_vector<double>({1.05, -109, 0.01, inf}, {4}), b, 0.1, 0.02));
  CHECK_FALSE(allclose(Tensor::from_vector<double>({1.05, -111, 0.01, inf}, {4}), b, 0.1, 0.02));
  CHECK_FALSE(allclose(Tensor::from_vector<double>({1, -100, 0.03, inf}, {4}), b, 0.1, 0.02));
  CHECK_FALSE(allclose(Tensor::from_vector<double>({1, -100, 0, -inf}, {4}), b));
  CHECK_FALSE(allclose(Tensor::from_vector<double>({1, -100, 0, 1e300}, {4}), b));
  CHECK_FALSE(allclose(Tensor::from_vector<double>({1, -100, 0, std::nan("")}, {4}), b));
  CHECK_FALSE(allclose(b.reshape({2, 2}), b));
  CHECK(allclose(cast(b.slice(0, 0, 3), DType::f32), b.slice(0, 0, 3)));  // dtypes may differ
  const Tensor x = test::random_tensor({5, 7}, DType::f32, 152);
  CHECK(allclose(test::strided_copy(x), x, 0, 0));
  CHECK_THROWS_WITH_AS(allclose(b, b, -1), doctest::Contains("[allclose]"), Error);
}

TEST_CASE("all_finite: CUDA matches CPU") {
  const Tensor x = test::random_tensor({5, 7}, DType::f32, 153);
  const Tensor y = add(x, Tensor::scalar(std::numeric_limits<double>::infinity()));
  test::check_cuda_matches_cpu(
      "all_finite",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{
            Tensor::scalar(all_finite(in[0]) ? 1 : 0, DType::f32, in[0].device()),
            Tensor::scalar(all_finite(in[1]) ? 1 : 0, DType::f32, in[1].device())};
      },
      {x, y});
}

TEST_CASE("all_finite: CUDA matches CPU for one NaN or Inf anywhere in a large tensor, strided") {
  using V = std::vector<Tensor>;
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = test::random_tensor({1000, 1001}, dt, 154);  // more than one grid pass
    const int64_t n = x.numel();
    for (double bad : {nan, inf, -inf})
      for (int64_t at : {n - 1, int64_t{0}, n / 2 + 7}) {
        INFO(dtype_name(dt) << " value " << bad << " at " << at);
        const Tensor y = x.clone();
        copy_(y.reshape({-1}).slice(0, at, at + 1), Tensor::scalar(bad, DType::f64));
        test::check_cuda_matches_cpu(
            "all_finite",
            [](const V& in) {
              const Device d = in[0].device();  // the answer lives where it was computed
              auto as_tensor = [d](bool b) { return Tensor::scalar(b ? 1 : 0, DType::f32, d); };
              return V{as_tensor(all_finite(in[0])), as_tensor(all_finite(in[1])),
                       as_tensor(all_finite(test::strided_copy(in[1])))};
            },
            {x, y}, 0, 1e-300);
        if (cuda_available()) {  // and the answers themselves, not only their agreement
          CHECK(all_finite(x.to(Device::cuda(0))));
          CHECK_FALSE(all_finite(test::strided_copy(y.to(Device::cuda(0)))));
        }
      }
  }
  if (cuda_available()) {
    CHECK(all_finite(zeros({0}, DType::f32, Device::cuda(0))));
    CHECK(all_finite(full({5}, 3, DType::i64, Device::cuda(0))));
  }
}
