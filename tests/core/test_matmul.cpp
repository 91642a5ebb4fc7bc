// matmul / bmm against a naive triple loop: transposes, broadcast batch dims, strided views,
// odd and empty sizes, f32 and f64, and the errors.
#include <array>

#include "tests/harness.h"

using namespace relpos;

namespace {

// Naive op(a) @ op(b) in double with numpy batch broadcasting; a and b have rank >= 2.
Tensor naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int64_t m = ta ? a.size(-1) : a.size(-2), k = ta ? a.size(-2) : a.size(-1);
  const int64_t n = tb ? b.size(-2) : b.size(-1);
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "test");
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  // Row-major index of the batch element `i` of `batch` inside `sub` (right-aligned, size-1 dims
  // broadcast).
  auto sub_index = [&](int64_t i, const Shape& sub) {
    int64_t index = 0, scale = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t coord = i % batch[d];
      i /= batch[d];
      const size_t lead = batch.size() - sub.size();
      if (d < lead) continue;
      if (sub[d - lead] != 1) index += coord * scale;
      scale *= sub[d - lead];
    }
    return index;
  };
  const int64_t nb = shape_numel(batch);
  std::vector<double> out(static_cast<size_t>(nb * m * n), 0.0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const double* pa = av.data() + sub_index(bi, a_batch) * m * k;
    const double* pb = bv.data() + sub_index(bi, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
        out[(bi * m + i) * n + j] = s;
      }
  }
  Shape shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  return Tensor::from_vector(out, shape);
}

// Stored shape of an operand: [..., rows, cols], swapped when it is passed transposed.
Shape stored(Shape batch, int64_t rows, int64_t cols, bool trans) {
  batch.push_back(trans ? cols : rows);
  batch.push_back(trans ? rows : cols);
  return batch;
}

// f32 sums of K <= 64 products of values in [-1, 1]: error ~ K * 2^-24, well under 1e-5; f64
// agrees to rounding.
double tol(DType dtype) {
  return dtype == DType::f32 ? 1e-5 : 1e-12;
}

const std::array<DType, 2> kFloating = {DType::f32, DType::f64};

}  // namespace

TEST_CASE("matmul: all four transpose combinations match the naive loop, odd sizes") {
  for (DType dtype : kFloating)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("dtype " << dtype_name(dtype) << " trans_a " << ta << " trans_b " << tb);
        const Tensor a = test::random_tensor(stored({2}, 7, 5, ta), dtype, 11);
        const Tensor b = test::random_tensor(stored({2}, 5, 3, tb), dtype, 12);
        const Tensor out = matmul(a, b, ta, tb);
        CHECK(out.shape() == Shape{2, 7, 3});
        CHECK(out.dtype() == dtype);
        CHECK_CLOSE(out, naive_matmul(a, b, ta, tb), tol(dtype), tol(dtype));
        CHECK_CLOSE(bmm(a, b, ta, tb), naive_matmul(a, b, ta, tb), tol(dtype), tol(dtype));
      }
}

TEST_CASE("matmul: batch dims broadcast, including a shared 2-D right operand") {
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor a = test::random_tensor({2, 1, 7, 5}, dtype, 21);
    const Tensor b = test::random_tensor({3, 5, 3}, dtype, 22);
    const Tensor out = matmul(a, b);
    CHECK(out.shape() == Shape{2, 3, 7, 3});
    CHECK_CLOSE(out, naive_matmul(a, b, false, false), tol(dtype), tol(dtype));
    // [B, H, L, D] @ [D, E] (transposed weight as a linear layer stores it), and the reverse.
    const Tensor x = test::random_tensor({2, 3, 7, 5}, dtype, 23);
    const Tensor w = test::random_tensor({4, 5}, dtype, 24);
    CHECK_CLOSE(matmul(x, w, false, true), naive_matmul(x, w, false, true), tol(dtype), tol(dtype));
    CHECK_CLOSE(matmul(w, x, false, true), naive_matmul(w, x, false, true), tol(dtype), tol(dtype));
    // A strided x whose batch and row dims still fold into one row stride.
    const Tensor xs = test::random_tensor({2, 3, 7, 9}, dtype, 25).slice(-1, 1, 6);
    CHECK_CLOSE(matmul(xs, w, false, true), naive_matmul(xs, w, false, true), tol(dtype),
                tol(dtype));
  }
}

TEST_CASE("matmul: strided, stepped, transposed and expanded views give the naive result") {
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor a = test::random_tensor({3, 7, 5}, dtype, 31);
    const Tensor b = test::random_tensor({3, 5, 3}, dtype, 32);
    const Tensor want = naive_matmul(a, b, false, false);
    // strided_copy: every other element, last two dims stored transposed (column-major).
    CHECK_CLOSE(matmul(test::strided_copy(a), test::strided_copy(b)), want, tol(dtype), tol(dtype));
    // Transposed views of transposed storage, passed with trans flags.
    const Tensor at = a.transpose(1, 2).contiguous().transpose(1, 2);
    CHECK_CLOSE(matmul(at, b), want, tol(dtype), tol(dtype));
    CHECK_CLOSE(matmul(a.transpose(1, 2), b, true, false), want, tol(dtype), tol(dtype));
    // Stepped slices in both matrix dims (no unit stride: the kernel must copy).
    const Tensor big = test::random_tensor({3, 14, 15}, dtype, 33);
    const Tensor stepped = big.slice(1, 0, 14, 2).slice(2, 1, 15, 3);  // [3, 7, 5]
    CHECK_CLOSE(matmul(stepped, b), naive_matmul(stepped, b, false, false), tol(dtype), tol(dtype));
    // Expanded operands: a broadcast batch and a row-broadcast matrix (stride 0 inside).
    const Tensor shared = test::random_tensor({1, 7, 5}, dtype, 34).expand({3, 7, 5});
    CHECK_CLOSE(bmm(shared, b), naive_matmul(shared, b, false, false), tol(dtype), tol(dtype));
    const Tensor rows = test::random_tensor({3, 1, 5}, dtype, 35).expand({3, 7, 5});
    CHECK_CLOSE(bmm(rows, b), naive_matmul(rows, b, false, false), tol(dtype), tol(dtype));
  }
}

TEST_CASE("matmul: transposed views reach BLAS without a copy") {
  const Tensor a = test::random_tensor({4, 33, 17}, DType::f32, 41);
  const Tensor b = test::random_tensor({4, 33, 19}, DType::f32, 42);
  reset_peak_memory(Device::cpu());
  const int64_t before = memory_stats(Device::cpu()).current_bytes;
  const Tensor out = matmul(a.transpose(1, 2), b.transpose(1, 2).transpose(1, 2));  // [4, 17, 19]
  // Only the output is allocated: a copy of either operand would raise the peak further.
  CHECK(memory_stats(Device::cpu()).peak_bytes - before == out.numel() * 4);
  CHECK_CLOSE(out, naive_matmul(a, b, true, false), 1e-5, 1e-5);
}

TEST_CASE("matmul: K = 0 gives zeros; M, N or batch = 0 give empty outputs") {
  for (DType dtype : kFloating) {
    const Tensor z = matmul(zeros({2, 3, 0}, dtype), zeros({2, 0, 4}, dtype));
    CHECK(z.shape() == Shape{2, 3, 4});
    CHECK(z.to_vector<double>() == std::vector<double>(24, 0.0));
    CHECK(matmul(zeros({0, 5}, dtype), zeros({5, 4}, dtype)).shape() == Shape{0, 4});
    CHECK(matmul(zeros({3, 5}, dtype), zeros({5, 0}, dtype)).shape() == Shape{3, 0});
    CHECK(bmm(zeros({0, 3, 5}, dtype), zeros({0, 5, 4}, dtype)).shape() == Shape{0, 3, 4});
    CHECK(matmul(zeros({2, 0, 3, 5}, dtype), zeros({5, 4}, dtype)).shape() == Shape{2, 0, 3, 4});
  }
}

TEST_CASE("matmul: bad shapes, dtypes and ranks throw naming the op") {
  CHECK_THROWS_WITH_AS(
      matmul(zeros({3, 4}), zeros({5, 2})),
      doctest::Contains("[matmul] inner dimensions differ: a is [3, 4], b is [5, 2]"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({4, 3}), zeros({5, 2}), true, false),
                       doctest::Contains("(transposed)"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3, 4}), zeros({3, 4, 2})), doctest::Contains("[matmul]"),
                       Error);  // batch 2 vs 3
  CHECK_THROWS_WITH_AS(matmul(zeros({4}), zeros({4, 2})), doctest::Contains("[matmul]"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({3, 4}), zeros({4, 2}, DType::f64)),
                       doctest::Contains("[matmul]"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({3, 4}, DType::i64), zeros({4, 2}, DType::i64)),
                       doctest::Contains("[matmul]"), Error);
  CHECK_THROWS_WITH_AS(bmm(zeros({3, 4}), zeros({4, 2})), doctest::Contains("[bmm]"), Error);
  CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}), zeros({1, 4, 2})), doctest::Contains("[bmm]"), Error);
  if (cuda_available())
    CHECK_THROWS_WITH_AS(matmul(zeros({3, 4}), zeros({4, 2}, DType::f32, Device::cuda(0))),
                         doctest::Contains("[matmul]"), Error);
}

TEST_CASE("matmul: CUDA matches CPU") {
  const Tensor a = test::random_tensor({2, 1, 7, 5}, DType::f32, 51);
  const Tensor b = test::random_tensor({3, 3, 5}, DType::f32, 52);
  test::check_cuda_matches_cpu(
      "matmul",
      [](const std::vector<Tensor>& in) { return std::vector{matmul(in[0], in[1], false, true)}; },
      {a, b});
}
