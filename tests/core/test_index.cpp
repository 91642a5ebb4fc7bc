// index_select, embedding, gather, scatter_add, index_add against naive loops over coordinates:
// every dim, odd shapes, strided inputs and indices, f32/f64/i64 data, i32/i64 ids, errors.
#include "tests/core/naive.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;
using test::coords_of;
using test::linear_of;
using test::make_data;

namespace {

// The same values as x, either as x itself or as a strided view.
Tensor layout(const Tensor& x, bool strided) {
  return strided ? test::strided_copy(x) : x;
}

// out[c] = x[c with c[dim] = index[c[dim]]]
std::vector<double> naive_index_select(const Tensor& x, int dim, const Tensor& index) {
  const std::vector<double> xv = x.to_vector<double>();
  const std::vector<int64_t> ids = index.to_vector<int64_t>();
  Shape shape = x.shape();
  shape[dim] = index.numel();
  std::vector<double> out(shape_numel(shape));
  for (int64_t p = 0; p < shape_numel(shape); ++p) {
    std::vector<int64_t> c = coords_of(p, shape);
    c[dim] = ids[c[dim]];
    out[p] = xv[linear_of(c, x.shape())];
  }
  return out;
}
// out[c] = x[c with c[dim] = index[c]]
std::vector<double> naive_gather(const Tensor& x, int dim, const Tensor& index) {
  const std::vector<double> xv = x.to_vector<double>();
  const std::vector<int64_t> ids = index.to_vector<int64_t>();
  std::vector<double> out(ids.size());
  for (int64_t p = 0; p < index.numel(); ++p) {
    std::vector<int64_t> c = coords_of(p, index.shape());
    c[dim] = ids[p];
    out[p] = xv[linear_of(c, x.shape())];
  }
  return out;
}
// out = x; out[c with c[dim] = id(c)] += src[c] over the positions c of `shape`, where id(c) is
// index[c] (scatter_add) or index[c[dim]] (index_add, one_d = true).
std::vector<double> naive_scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src,
                                  const Shape& shape, bool one_d) {
  std::vector<double> out = x.to_vector<double>();
  const std::vector<double> sv = src.to_vector<double>();
  const std::vector<int64_t> ids = index.to_vector<int64_t>();
  for (int64_t p = 0; p < shape_numel(shape); ++p) {
    const std::vector<int64_t> c = coords_of(p, shape);
    std::vector<int64_t> t = c;
    t[dim] = one_d ? ids[c[dim]] : ids[p];
    out[linear_of(t, x.shape())] += sv[linear_of(c, src.shape())];
  }
  return out;
}

Tensor expected(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

const DType kDataTypes[] = {DType::f32, DType::f64, DType::i64};
const DType kIndexTypes[] = {DType::i32, DType::i64};
const Shape kShape = {5, 6, 7};
// f32 sums of a few terms in [-1, 1] rounded in f32 (reference in f64): error ~ terms^2 * 6e-8.
// f64 adds in the reference's order (increasing position along dim), so it is exact; i64 exact.
double scatter_rtol(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-12;
}
double scatter_atol(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-12;
}

}  // namespace

TEST_CASE("index_select: picks slices along every dim, repeated ids, strided x and index") {
  uint64_t seed = 10;
  for (DType dt : kDataTypes)
    for (DType it : kIndexTypes)
      for (int dim = 0; dim < 3; ++dim)
        for (bool strided : {false, true}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(dtype_name(it));
          CAPTURE(dim);
          CAPTURE(strided);
          const Tensor x = make_data(kShape, dt, ++seed);
          // 9 ids with repeats; strided: every other element of an 18-long buffer.
          const Tensor ids = test::random_indices({strided ? 18 : 9}, kShape[dim], ++seed, it);
          const Tensor index = strided ? ids.slice(0, 0, 18, 2) : ids;
          const Tensor out = index_select(layout(x, strided), dim - (dim == 2 ? 3 : 0), index);
          Shape shape = kShape;
          shape[dim] = 9;
          CHECK(out.shape() == shape);
          CHECK(out.dtype() == dt);
          CHECK(out.to_vector<double>() == naive_index_select(x, dim, index));
        }
  const Tensor x = test::random_tensor({4, 3}, DType::f32, 1);
  CHECK(index_select(x, 0, Tensor::from_vector<int64_t>({}, {0})).shape() == Shape{0, 3});
  test::check_cuda_matches_cpu(
      "index_select", [](const auto& in) { return std::vector{index_select(in[0], 1, in[1])}; },
      {x, Tensor::from_vector<int32_t>({2, 0, 2, 1}, {4})});
}

TEST_CASE("embedding: rows of weight for ids of any shape, strided ids") {
  const Tensor weight = test::random_tensor({11, 5}, DType::f64, 20);  // weight: [V, D]
  for (DType it : kIndexTypes) {
    const Tensor ids = test::random_indices({4, 3}, 11, 21, it).transpose(0, 1);  // [3, 4]
    const Tensor out = embedding(test::strided_copy(weight), ids);                // [3, 4, 5]
    CHECK(out.shape() == Shape{3, 4, 5});
    CHECK(out.to_vector<double>() == naive_index_select(weight, 0, ids.reshape({12})));
  }
  const Tensor one = embedding(weight, Tensor::scalar(7, DType::i64));  // 0-dim ids: [D]
  CHECK(one.to_vector<double>() == weight.select(0, 7).to_vector<double>());
  test::check_cuda_matches_cpu("embedding",
                               [](const auto& in) { return std::vector{embedding(in[0], in[1])}; },
                               {weight, test::random_indices({2, 6}, 11, 22)});
}

TEST_CASE("gather: index smaller than x off dim, longer along dim, every dim, strided") {
  uint64_t seed = 30;
  for (DType dt : kDataTypes)
    for (DType it : kIndexTypes)
      for (int dim = 0; dim < 3; ++dim)
        for (bool strided : {false, true}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(dtype_name(it));
          CAPTURE(dim);
          CAPTURE(strided);
          const Tensor x = make_data(kShape, dt, ++seed);
          Shape ishape = {4, 5, 3};  // smaller than x except along dim, where it is 9
          ishape[dim] = 9;
          const Tensor index = test::random_indices(ishape, kShape[dim], ++seed, it);
          const Tensor out = gather(layout(x, strided), dim, layout(index, strided));
          CHECK(out.shape() == ishape);
          CHECK(out.to_vector<double>() == naive_gather(x, dim, index));
        }
  const Tensor x = test::random_tensor({3, 4}, DType::f32, 1);
  test::check_cuda_matches_cpu("gather",
                               [](const auto& in) { return std::vector{gather(in[0], 1, in[1])}; },
                               {x, test::random_indices({3, 2}, 4, 2)});
}

TEST_CASE("scatter_add: repeated ids accumulate, index smaller than src and x, every dim") {
  uint64_t seed = 40;
  for (DType dt : kDataTypes)
    for (DType it : kIndexTypes)
      for (int dim = 0; dim < 3; ++dim)
        for (bool strided : {false, true}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(dtype_name(it));
          CAPTURE(dim);
          CAPTURE(strided);
          const Tensor x = make_data(kShape, dt, ++seed);
          Shape ishape = {4, 5, 3}, sshape = {5, 5, 4};  // index <= src everywhere, <= x off dim
          ishape[dim] = 11;  // ids drawn from kShape[dim] values: repeats are certain
          sshape[dim] = 12;
          const Tensor src = make_data(sshape, dt, ++seed);
          const Tensor index = test::random_indices(ishape, kShape[dim], ++seed, it);
          const Tensor out =
              scatter_add(layout(x, strided), dim, layout(index, strided), layout(src, strided));
          CHECK_CLOSE(out, expected(naive_scatter(x, dim, index, src, ishape, false), kShape),
                      scatter_rtol(dt), scatter_atol(dt));
        }
  const Tensor x = test::random_tensor({3, 4}, DType::f32, 1);
  test::check_cuda_matches_cpu(
      "scatter_add",
      [](const auto& in) { return std::vector{scatter_add(in[0], 1, in[1], in[2])}; },
      {x, test::random_indices({3, 6}, 4, 2), test::random_tensor({3, 6}, DType::f32, 3)});
}

TEST_CASE("index_add: repeated ids accumulate into slices along every dim, strided inputs") {
  uint64_t seed = 50;
  for (DType dt : kDataTypes)
    for (DType it : kIndexTypes)
      for (int dim = 0; dim < 3; ++dim)
        for (bool strided : {false, true}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(dtype_name(it));
          CAPTURE(dim);
          CAPTURE(strided);
          const Tensor x = make_data(kShape, dt, ++seed);
          Shape sshape = kShape;
          sshape[dim] = 13;
          const Tensor src = make_data(sshape, dt, ++seed);
          const Tensor ids = test::random_indices({26}, kShape[dim], ++seed, it);
          const Tensor index = strided ? ids.slice(0, 1, 26, 2) : ids.slice(0, 0, 13);
          const Tensor out = index_add(layout(x, strided), dim, index, layout(src, strided));
          CHECK_CLOSE(out, expected(naive_scatter(x, dim, index, src, sshape, true), kShape),
                      scatter_rtol(dt), scatter_atol(dt));
        }
  const Tensor x = test::random_tensor({5, 4}, DType::f32, 1);
  test::check_cuda_matches_cpu(
      "index_add", [](const auto& in) { return std::vector{index_add(in[0], 0, in[1], in[2])}; },
      {x, test::random_indices({7}, 5, 2), test::random_tensor({7, 4}, DType::f32, 3)});
}

TEST_CASE("scatter_add and index_add: large inputs on the parallel path are deterministic") {
  // Big enough for the OpenMP loops; few targets along dim, so each gets ~30-100 terms.
  // f32 accumulation error grows ~ terms * eps * |sum|: rtol/atol 1e-4 covers 100 terms.
  for (int dim : {0, 1, 2}) {
    CAPTURE(dim);
    const Shape xs = {9, 10, 11};
    Shape ss = xs;
    ss[dim] = 300;
    const Tensor x = test::random_tensor(xs, DType::f32, 60 + dim);
    const Tensor src = test::random_tensor(ss, DType::f32, 70 + dim);
    const Tensor index = test::random_indices(ss, xs[dim], 80 + dim, DType::i32);
    const Tensor a = scatter_add(x, dim, index, src), b = scatter_add(x, dim, index, src);
    CHECK(a.to_vector<float>() == b.to_vector<float>());
    CHECK_CLOSE(a, expected(naive_scatter(x, dim, index, src, ss, false), xs), 1e-4, 1e-4);
    const Tensor ids = test::random_indices({300}, xs[dim], 90 + dim);
    const Tensor c = index_add(x, dim, ids, src), e = index_add(x, dim, ids, src);
    CHECK(c.to_vector<float>() == e.to_vector<float>());
    CHECK_CLOSE(c, expected(naive_scatter(x, dim, ids, src, ss, true), xs), 1e-4, 1e-4);
    const Tensor g = gather(x, dim, index);  // and gather over the same large index
    CHECK(g.to_vector<double>() == naive_gather(x, dim, index));
  }
}

TEST_CASE("index ops: out-of-range and negative ids name the op, the id and the range") {
  const Tensor x = test::random_tensor({3, 5}, DType::f32, 1);
  const Tensor bad = Tensor::from_vector<int64_t>({0, 7, 2}, {3});
  const Tensor neg = Tensor::from_vector<int32_t>({-1, 0, 2}, {3});
  CHECK_THROWS_WITH_AS(index_select(x, 1, bad), doctest::Contains("[index_select] index 7"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 1, bad), doctest::Contains("[0, 5)"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, neg),
                       doctest::Contains("index -1 is out of range [0, 3)"), Error);
  CHECK_THROWS_WITH_AS(embedding(x, bad), doctest::Contains("[embedding]"), Error);
  CHECK_THROWS_WITH_AS(embedding(x, bad), doctest::Contains("index 7 is out of range [0, 3)"),
                       Error);
  const Tensor bad2 = Tensor::from_vector<int64_t>({0, 1, 2, 5, 0, 1}, {3, 2});
  CHECK_THROWS_WITH_AS(gather(x, 1, bad2), doctest::Contains("[gather] index 5"), Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 1, bad2, ones({3, 2})),
                       doctest::Contains("[scatter_add] index 5 is out of range [0, 5)"), Error);
  CHECK_THROWS_WITH_AS(index_add(x, 0, bad, ones({3, 5})),
                       doctest::Contains("[index_add] index 7 is out of range [0, 3)"), Error);
  CHECK_THROWS_WITH_AS(index_add(x, 1, neg, ones({3, 3})), doctest::Contains("index -1"), Error);
  // A bad id far inside a large index is still found (the check runs in parallel).
  Tensor big = zeros({100000}, DType::i64);
  fill_(big.slice(0, 77777, 77778), 9);
  CHECK_THROWS_WITH_AS(index_select(x, 1, big), doctest::Contains("index 9"), Error);
}

TEST_CASE("index ops: shape, dtype and dim errors name the op") {
  const Tensor x = test::random_tensor({3, 5}, DType::f32, 1);
  const Tensor i1 = Tensor::from_vector<int64_t>({0, 1}, {2});
  const Tensor i2 = Tensor::from_vector<int64_t>({0, 1, 1, 0}, {2, 2});
  const auto has = [](const char* s) { return doctest::Contains(s); };
  CHECK_THROWS_WITH_AS(index_select(x, 0, i2), has("[index_select] index must be 1-D"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 2, i1), has("[index_select] dim 2"), Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, cast(i1, DType::f32)), has("[index_select]"), Error);
  CHECK_THROWS_WITH_AS(embedding(zeros({4}), i1), has("[embedding] weight must be [V, D]"), Error);
  CHECK_THROWS_WITH_AS(embedding(x, cast(i1, DType::f64)), has("[embedding]"), Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, i1), has("[gather] index i64[2] cpu must have the rank"),
                       Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, zeros({4, 2}, DType::i64)), has("[gather] index"), Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, zeros({4, 2}, DType::i64)), has("in dim 0"), Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 1, i2, ones({2, 1})), has("[scatter_add] index"), Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 1, i2, ones({2, 2}, DType::f64)), has("[scatter_add]"),
                       Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 0, zeros({2, 6}, DType::i64), ones({2, 6})),
                       has("[scatter_add] index i64[2, 6] cpu is larger than input"), Error);
  CHECK_THROWS_WITH_AS(index_add(x, 0, i1, ones({2, 4})), has("[index_add] src"), Error);
  CHECK_THROWS_WITH_AS(index_add(x, 0, i2, ones({2, 5})), has("[index_add] index must be 1-D"),
                       Error);
  if (cuda_available()) {  // mixing devices is an error naming the op
    CHECK_THROWS_WITH_AS(index_select(x, 0, i1.to(Device::cuda(0))), has("[index_select]"), Error);
    CHECK_THROWS_WITH_AS(gather(x.to(Device::cuda(0)), 0, i2), has("[gather]"), Error);
  }
}

namespace {

// Random data of any dtype, u8 and i32 included: integers in [0, 250) (u8) or [-50, 50).
Tensor any_data(const Shape& shape, DType dtype, uint64_t seed) {
  if (dtype == DType::u8) return cast(test::random_tensor(shape, DType::f64, seed, 0, 250), dtype);
  if (dtype == DType::i32) return cast(make_data(shape, DType::i64, seed), dtype);
  return make_data(shape, dtype, seed);
}

}  // namespace

TEST_CASE("index ops: CUDA matches CPU on every dim, all dtypes, strided data and indices") {
  uint64_t seed = 100;
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8})
    for (DType it : kIndexTypes)
      for (int dim = 0; dim < 3; ++dim) {
        CAPTURE(dtype_name(dt));
        CAPTURE(dtype_name(it));
        CAPTURE(dim);
        Shape ishape = {4, 5, 3}, sshape = {5, 5, 4};  // index <= src, and <= x off dim
        ishape[dim] = 11;
        sshape[dim] = 12;
        Shape add_shape = kShape;  // index_add's src: x's shape with 13 along dim
        add_shape[dim] = 13;
        const Tensor x = any_data(kShape, dt, ++seed);
        const Tensor src = any_data(sshape, dt, ++seed);
        const Tensor add_src = any_data(add_shape, dt, ++seed);
        const Tensor index = test::random_indices(ishape, kShape[dim], ++seed, it);
        const Tensor ids = test::random_indices({26}, kShape[dim], ++seed, it);
        // f32 sums of <= 11 terms added in another order by the atomics: within 1e-5 (as above);
        // the rest is exact (f64 sums of <= 11 values in [-1, 1] differ by ~1e-15).
        const double tol = dt == DType::f32 ? 1e-5 : dt == DType::f64 ? 1e-12 : 0;
        test::check_cuda_matches_cpu(
            "index_select, gather, scatter_add, index_add",
            [dim](const std::vector<Tensor>& in) {
              const Tensor ids13 = in[4].slice(0, 1, 26, 2);  // strided 1-D index
              return std::vector{
                  index_select(in[0], dim, in[4]),
                  index_select(test::strided_copy(in[0]), dim, ids13),
                  gather(in[0], dim, in[3]),
                  gather(test::strided_copy(in[0]), dim, test::strided_copy(in[3])),
                  scatter_add(in[0], dim, in[3], in[1]),
                  scatter_add(test::strided_copy(in[0]), dim, test::strided_copy(in[3]),
                              test::strided_copy(in[1])),
                  index_add(in[0], dim, ids13, in[2]),
                  index_add(test::strided_copy(in[0]), dim, ids13, test::strided_copy(in[2]))};
            },
            {x, src, add_src, index, ids}, tol, tol);
      }
}

TEST_CASE("scatter_add and index_add: CUDA matches CPU with many colliding ids, large inputs") {
  // ~700 terms land on each output element. The atomics add them in a nondeterministic order
  // and the CPU in increasing position: f32 sums of magnitude ~15 then differ by ~sqrt(700) eps
  // |partial sums| ~ 3e-5 typically, <= 700 eps * 40 ~ 2e-3 at worst; f64 by ~1e-13.
  // Integers (u8 wrapping modulo 256) are exact in any order.
  for (DType dt : {DType::f32, DType::f64, DType::i64, DType::i32, DType::u8})
    for (int dim : {0, 1, 2}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(dim);
      const Shape xs = {3, 4, 5};
      Shape ss = xs;
      ss[dim] = 2100;
      const double rtol = dt == DType::f32 ? 1e-4 : dt == DType::f64 ? 1e-10 : 0;
      const double atol = dt == DType::f32 ? 2e-3 : dt == DType::f64 ? 1e-10 : 0;
      test::check_cuda_matches_cpu(
          "scatter_add / index_add with collisions",
          [dim](const std::vector<Tensor>& in) {
            return std::vector{scatter_add(in[0], dim, in[2], in[1]),
                               index_add(in[0], dim, in[3], in[1])};
          },
          {any_data(xs, dt, 110 + dim), any_data(ss, dt, 120 + dim),
           test::random_indices(ss, xs[dim], 130 + dim, DType::i32),
           test::random_indices({2100}, xs[dim], 140 + dim)},
          rtol, atol);
    }
  // Large gathers: 60000 embedding rows of 64, and a gather over a 5000 x 300 index.
  test::check_cuda_matches_cpu(
      "large index_select / embedding / gather",
      [](const std::vector<Tensor>& in) {
        return std::vector{index_select(in[0], 0, in[1]), embedding(in[0], in[2]),
                           gather(in[3], 1, in[4])};
      },
      {test::random_tensor({1000, 64}, DType::f32, 150), test::random_indices({60000}, 1000, 151),
       test::random_indices({300, 200}, 1000, 152, DType::i32),
       test::random_tensor({5000, 40}, DType::f32, 153),
       test::random_indices({5000, 300}, 40, 154)},
      0, 0);
}

TEST_CASE("index ops: CUDA out-of-range ids throw the CPU's message: op, first id, range, count") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA index range errors");
    return;
  }
  const Device gpu = Device::cuda(0);
  const Tensor x = test::random_tensor({3, 5}, DType::f32, 1);
  const Tensor xg = x.to(gpu);
  // Three bad ids; the first in order is 9 (the check runs in parallel, the report is ordered).
  const Tensor bad = Tensor::from_vector<int64_t>({0, 9, 2, -3, 11}, {5});
  const Tensor badg = bad.to(gpu);
  CHECK(error_of([&] { index_select(xg, 1, badg); }) ==
        "[index_select] index 9 is out of range [0, 5) for dim 1 of f32[3, 5] cuda:0 (3 of 5 ids "
        "out of range)");
  // The same words as the CPU, but for the device.
  std::string cpu_message = error_of([&] { index_select(x, 1, bad); });
  cpu_message.replace(cpu_message.find(" cpu "), 5, " cuda:0 ");
  CHECK(error_of([&] { index_select(xg, 1, badg); }) == cpu_message);
  CHECK_THROWS_WITH_AS(embedding(xg, badg), doctest::Contains("[embedding]"), Error);
  CHECK_THROWS_WITH_AS(index_select(xg, 0, Tensor::from_vector<int32_t>({-1, 0}, {2}).to(gpu)),
                       doctest::Contains("[index_select] index -1 is out of range [0, 3)"), Error);
  // A transposed index: "first" is in the view's row-major order, not memory order.
  const Tensor ids = Tensor::from_vector<int64_t>({0, 6, 1, 7, 2, 3}, {2, 3}).to(gpu);  // [2, 3]
  CHECK_THROWS_WITH_AS(gather(xg, 1, ids.transpose(0, 1)),  // view: [[0, 7], [6, 2], [1, 3]]
                       doctest::Contains("[gather] index 7 is out of range [0, 5) for dim 1"),
                       Error);
  CHECK_THROWS_WITH_AS(scatter_add(xg, 1, ids, ones({2, 3}, DType::f32, gpu)),
                       doctest::Contains("[scatter_add] index 6 is out of range [0, 5) for dim 1 "
                                         "of f32[3, 5] cuda:0 (2 of 6 ids out of range)"),
                       Error);
  CHECK_THROWS_WITH_AS(index_add(xg, 0, badg.slice(0, 0, 3), ones({3, 5}, DType::f32, gpu)),
                       doctest::Contains("[index_add] index 9 is out of range [0, 3)"), Error);
  // An empty dim: every id is out of range.
  CHECK_THROWS_WITH_AS(index_select(zeros({3, 0}, DType::f32, gpu), 1, badg.slice(0, 0, 1)),
                       doctest::Contains("[index_select] index 0 is out of range [0, 0)"), Error);
  // One bad id far inside a large index is still found.
  Tensor big = zeros({100000}, DType::i64, gpu);
  fill_(big.slice(0, 77777, 77778), 9);
  CHECK_THROWS_WITH_AS(index_select(xg, 1, big),
                       doctest::Contains("index 9 is out of range [0, 5) for dim 1 of f32[3, 5] "
                                         "cuda:0 (1 of 100000 ids out of range)"),
                       Error);
  // After an error the device is still usable.
  CHECK(index_select(xg, 1, big.slice(0, 0, 4)).to(Device::cpu()).to_vector<double>() ==
        index_select(x, 1, zeros({4}, DType::i64)).to_vector<double>());
}
