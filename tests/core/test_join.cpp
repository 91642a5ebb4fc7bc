// cat, stack, pad, slice_assign against naive loops over coordinates: every dim, odd shapes,
// strided and transposed inputs, f32/f64/i64, broadcasting src, and errors naming the op.
#include "tests/core/naive.h"
#include "tests/harness.h"

using namespace relpos;
using test::coords_of;
using test::linear_of;
using test::make_data;

namespace {

// Three layouts of the same values: contiguous, strided_copy, and a transposed view.
Tensor with_layout(const Tensor& x, int which) {
  if (which == 1) return test::strided_copy(x);
  if (which == 2 && x.dim() >= 2) return x.transpose(0, 1).contiguous().transpose(0, 1);
  return x;
}

// out[c] = xs[i][c with c[dim] - (sizes of xs before i)]
std::vector<double> naive_cat(const std::vector<Tensor>& xs, int dim) {
  Shape shape = xs[0].shape();
  shape[dim] = 0;
  for (const Tensor& x : xs) shape[dim] += x.size(dim);
  std::vector<double> out;
  for (int64_t p = 0; p < shape_numel(shape); ++p) {
    std::vector<int64_t> c = coords_of(p, shape);
    size_t i = 0;
    while (c[dim] >= xs[i].size(dim)) c[dim] -= xs[i++].size(dim);
    out.push_back(xs[i].to_vector<double>()[linear_of(c, xs[i].shape())]);
  }
  return out;
}

const DType kDataTypes[] = {DType::f32, DType::f64, DType::i64};

}  // namespace

TEST_CASE("cat: joins along every dim, strided and transposed parts, f32/f64/i64") {
  uint64_t seed = 100;
  for (DType dt : kDataTypes)
    for (int dim = 0; dim < 3; ++dim) {
      CAPTURE(dtype_name(dt));
      CAPTURE(dim);
      std::vector<Tensor> xs;
      const int64_t sizes[] = {2, 1, 3};
      for (int i = 0; i < 3; ++i) {
        Shape shape = {3, 4, 5};
        shape[dim] = sizes[i];
        xs.push_back(with_layout(make_data(shape, dt, ++seed), i));
      }
      const Tensor out = cat(xs, dim == 2 ? -1 : dim);
      Shape shape = {3, 4, 5};
      shape[dim] = 6;
      CHECK(out.shape() == shape);
      CHECK(out.dtype() == dt);
      CHECK(out.to_vector<double>() == naive_cat(xs, dim));
    }
  // Zero-size parts are allowed and contribute nothing.
  const Tensor a = test::random_tensor({2, 3}, DType::f32, 1);
  CHECK(cat({a, zeros({2, 0}), a}, 1).to_vector<double>() == naive_cat({a, a}, 1));
  test::check_cuda_matches_cpu("cat",
                               [](const auto& in) {
                                 return std::vector{cat({in[0], in[1]}, 0)};
                               },
                               {a, test::random_tensor({5, 3}, DType::f32, 2)});
}

TEST_CASE("stack: new dim at every position, out[..., i, ...] = xs[i]") {
  uint64_t seed = 200;
  for (DType dt : kDataTypes)
    for (int dim = 0; dim <= 2; ++dim) {
      CAPTURE(dtype_name(dt));
      CAPTURE(dim);
      std::vector<Tensor> xs;
      for (int i = 0; i < 3; ++i) xs.push_back(with_layout(make_data({3, 5}, dt, ++seed), i));
      const Tensor out = stack(xs, dim == 2 ? -1 : dim);
      Shape shape = {3, 5};
      shape.insert(shape.begin() + dim, 3);
      REQUIRE(out.shape() == shape);
      const std::vector<double> ov = out.to_vector<double>();
      for (int64_t p = 0; p < out.numel(); ++p) {
        std::vector<int64_t> c = coords_of(p, shape);
        const int64_t i = c[dim];
        c.erase(c.begin() + dim);
        CHECK(ov[p] == xs[i].to_vector<double>()[linear_of(c, {3, 5})]);
      }
    }
  test::check_cuda_matches_cpu(
      "stack",
      [](const auto& in) {
        return std::vector{stack({in[0], in[1]}, 1)};
      },
      {test::random_tensor({2, 3}, DType::f32, 1), test::random_tensor({2, 3}, DType::f32, 2)});
}

TEST_CASE("pad: 1, 2 and 3 trailing dims, last dim first, filled with value") {
  const std::vector<std::vector<int64_t>> cases = {
      {1, 2}, {0, 3, 2, 1}, {1, 1, 0, 2, 3, 0}, {0, 0}};
  uint64_t seed = 300;
  for (DType dt : kDataTypes)
    for (const auto& pads : cases)
      for (bool strided : {false, true}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(shape_str(pads));
        CAPTURE(strided);
        const Shape xs = {2, 3, 4, 5};
        const Tensor x = make_data(xs, dt, ++seed);
        const Tensor out = pad(strided ? test::strided_copy(x) : x, pads, -7);
        Shape shape = xs;
        for (size_t p = 0; p < pads.size() / 2; ++p) shape[3 - p] += pads[2 * p] + pads[2 * p + 1];
        REQUIRE(out.shape() == shape);
        const std::vector<double> xv = x.to_vector<double>(), ov = out.to_vector<double>();
        for (int64_t p = 0; p < out.numel(); ++p) {
          std::vector<int64_t> c = coords_of(p, shape);
          bool inside = true;
          for (size_t k = 0; k < pads.size() / 2; ++k) {
            c[3 - k] -= pads[2 * k];
            inside = inside && c[3 - k] >= 0 && c[3 - k] < xs[3 - k];
          }
          CHECK(ov[p] == (inside ? xv[linear_of(c, xs)] : -7.0));
        }
      }
  test::check_cuda_matches_cpu("pad",
                               [](const auto& in) {
                                 return std::vector{pad(in[0], {1, 2, 0, 1}, 0.5)};
                               },
                               {test::random_tensor({3, 4}, DType::f32, 1)});
}

TEST_CASE("slice_assign: replaces the slice, broadcasts src, leaves x unchanged") {
  const Shape xs = {5, 6, 7};
  // (dim, start, end, src shape); negative bounds count from the end, like Tensor::slice.
  struct Case {
    int dim;
    int64_t start, end;
    Shape src;
  };
  const Case cases[] = {{0, 1, 4, {3, 6, 7}}, {1, 2, 5, {3, 1}},    {2, -4, -1, {3}},
                        {1, 0, 6, {}},        {2, 6, 7, {5, 6, 1}}, {0, 3, 3, {1}}};
  uint64_t seed = 400;
  for (DType dt : kDataTypes)
    for (const Case& k : cases)
      for (bool strided : {false, true}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(k.dim);
        CAPTURE(k.start);
        CAPTURE(shape_str(k.src));
        const Tensor x = make_data(xs, dt, ++seed);
        const Tensor src = make_data(k.src, dt, ++seed);
        const Tensor xin = strided ? test::strided_copy(x) : x;
        const std::vector<double> before = xin.to_vector<double>();
        const Tensor out = slice_assign(xin, k.dim, k.start, k.end,
                                        strided && src.dim() >= 1 ? test::strided_copy(src) : src);
        CHECK(xin.to_vector<double>() == before);
        const int64_t lo = k.start < 0 ? k.start + xs[k.dim] : k.start;
        const int64_t hi = k.end < 0 ? k.end + xs[k.dim] : k.end;
        const std::vector<double> sv = src.to_vector<double>(), ov = out.to_vector<double>();
        REQUIRE(out.shape() == xs);
        for (int64_t p = 0; p < out.numel(); ++p) {
          std::vector<int64_t> c = coords_of(p, xs);
          if (c[k.dim] < lo || c[k.dim] >= hi) {
            CHECK(ov[p] == before[p]);
            continue;
          }
          c[k.dim] -= lo;
          // src aligned to the right; its size-1 dims broadcast (coordinate 0).
          std::vector<int64_t> sc(k.src.size());
          for (size_t d = 0; d < sc.size(); ++d) {
            const size_t od = d + xs.size() - sc.size();
            sc[d] = k.src[d] == 1 ? 0 : c[od];
          }
          CHECK(ov[p] == sv[linear_of(sc, k.src)]);
        }
      }
  test::check_cuda_matches_cpu(
      "slice_assign",
      [](const auto& in) { return std::vector{slice_assign(in[0], 1, 1, 3, in[1])}; },
      {test::random_tensor({3, 4}, DType::f32, 1), test::random_tensor({3, 1}, DType::f32, 2)});
}

TEST_CASE("join ops: empty lists, mismatched shapes, dtypes and bad pads name the op") {
  const auto has = [](const char* s) { return doctest::Contains(s); };
  const Tensor a = zeros({2, 3}), b = zeros({2, 4});
  CHECK_THROWS_WITH_AS(cat({}, 0), has("[cat] needs at least one tensor"), Error);
  CHECK_THROWS_WITH_AS(cat({a, b}, 0), has("[cat] tensor 1 is f32[2, 4] cpu"), Error);
  CHECK_THROWS_WITH_AS(cat({a, zeros({2, 3, 1})}, 0), has("[cat]"), Error);
  CHECK_THROWS_WITH_AS(cat({a, zeros({2, 3}, DType::f64)}, 0), has("[cat] dtypes differ"), Error);
  CHECK_THROWS_WITH_AS(cat({a, b}, 2), has("[cat] dim 2"), Error);
  CHECK(cat({a, b}, 1).shape() == Shape{2, 7});
  CHECK_THROWS_WITH_AS(stack({}, 0), has("[stack]"), Error);
  CHECK_THROWS_WITH_AS(stack({a, b}, 0), has("[stack] tensor 1 is f32[2, 4] cpu"), Error);
  CHECK_THROWS_WITH_AS(stack({a, a}, 3), has("[stack] dim 3"), Error);
  CHECK_THROWS_WITH_AS(pad(a, {1}, 0), has("[pad] pads [1]"), Error);
  CHECK_THROWS_WITH_AS(pad(a, {1, 1, 1, 1, 1, 1}, 0), has("[pad]"), Error);
  CHECK_THROWS_WITH_AS(pad(a, {1, -1}, 0), has("[pad] pads [1, -1] must be non-negative"), Error);
  CHECK_THROWS_WITH_AS(slice_assign(a, 1, 0, 2, zeros({3})),
                       has("[slice_assign] shapes [3] and [2, 2] do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(slice_assign(a, 1, 0, 2, zeros({1, 2, 2})),
                       has("[slice_assign] src f32[1, 2, 2] cpu does not broadcast"), Error);
  CHECK_THROWS_WITH_AS(slice_assign(a, 1, 0, 2, zeros({2}, DType::i64)),
                       has("[slice_assign] dtypes differ"), Error);
  CHECK_THROWS_WITH_AS(slice_assign(a, 2, 0, 2, zeros({2})), has("[slice_assign] dim 2"), Error);
  if (cuda_available())
    CHECK_THROWS_WITH_AS(cat({a, a.to(Device::cuda(0))}, 0), has("[cat] tensors are on different"),
                         Error);
}
