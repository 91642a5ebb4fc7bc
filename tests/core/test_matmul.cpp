// matmul / bmm against a naive triple loop: transposes, broadcast batch dims, strided views,
// odd and empty sizes, f32 and f64, and the errors.
#include <omp.h>

#include <array>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "core/cpu/blas.h"
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

// Heads split from [B, L, H·D] are [B, H, L, D] views whose batch dims do not fold into one
// stride; the CPU kernel takes the two batch strides as they are (gemm_operand.h).
TEST_CASE("matmul: two batch dims that do not fold reach BLAS without a copy, same bits") {
  const int64_t B = 3, H = 4, L = 9, D = 5;
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor q = test::random_tensor({B, L, H, D}, dtype, 51).transpose(1, 2);  // [B, H, L, D]
    const Tensor k = test::random_tensor({B, L, H, D}, dtype, 52).transpose(1, 2);
    const Tensor shared = test::random_tensor({H, D, 7}, dtype, 53);  // broadcast over B
    const Tensor stepped = test::random_tensor({B, H, 2 * L, 3 * D}, dtype, 54)
                               .slice(2, 0, 2 * L, 2)
                               .slice(3, 0, 3 * D, 3);  // no unit stride: copied
    for (const bool tb : {false, true}) {
      const Tensor kk = tb ? k : k.transpose(2, 3);  // [B, H, D, L] as a view, or k passed tb
      reset_peak_memory(Device::cpu());
      const int64_t before = memory_stats(Device::cpu()).current_bytes;
      const Tensor out = matmul(q, kk, false, tb);  // [B, H, L, L]
      CHECK(memory_stats(Device::cpu()).peak_bytes - before ==
            out.numel() * static_cast<int64_t>(dtype_size(dtype)));
      CHECK(test::same_bits(out, matmul(q.contiguous(), kk.contiguous(), false, tb)));
      CHECK_CLOSE(out, naive_matmul(q.contiguous(), kk.contiguous(), false, tb), tol(dtype),
                  tol(dtype));
    }
    CHECK(test::same_bits(matmul(q, shared), matmul(q.contiguous(), shared)));
    CHECK(test::same_bits(matmul(q, k, true, false),  // qᵀ k: [B, H, D, D]
                          matmul(q.contiguous(), k.contiguous(), true, false)));
    CHECK_CLOSE(matmul(stepped, k, false, true),
                naive_matmul(stepped.contiguous(), k.contiguous(), false, true), tol(dtype),
                tol(dtype));
  }
}

TEST_CASE("cpu gemm with beta 0: the bits of OpenBLAS's own beta 0, over NaN and strided rows") {
  // cpu::gemm clears c itself and accumulates with beta 1 (core/cpu/blas.h); the result must be
  // OpenBLAS's beta-0 product bit for bit, signed zeros included, whatever c held before.
  std::mt19937 rng(7);
  const auto check = [&]<typename T>(T) {
    for (int trial = 0; trial < 300; ++trial) {
      const bool tiny = trial % 4 == 0;
      const int m = 1 + static_cast<int>(rng() % (tiny ? 6 : 150));
      const int n = 1 + static_cast<int>(rng() % (tiny ? 6 : 150));
      const int k = static_cast<int>(rng() % (tiny ? 6 : 200));
      const bool ta = rng() % 2 != 0, tb = rng() % 2 != 0;
      const int ldc = n + static_cast<int>(rng() % 3);  // rows of c with a gap, sometimes
      std::uniform_real_distribution<T> value(-1, 1);
      std::vector<T> a(static_cast<size_t>(m) * k + 1), b(static_cast<size_t>(k) * n + 1);
      for (T& x : a) x = rng() % 5 == 0 ? T(0) : value(rng);
      for (T& x : b) x = rng() % 5 == 0 ? T(-0.0) : value(rng);
      std::vector<T> ours(static_cast<size_t>(m) * ldc, std::numeric_limits<T>::quiet_NaN());
      std::vector<T> blas = ours;
      const int lda = ta ? m : k, ldb = tb ? k : n;
      cpu::gemm(ta, tb, m, n, k, T(1), a.data(), lda, b.data(), ldb, T(0), ours.data(), ldc);
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, blas.data(), ldc);
      else
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, 1.0, a.data(), lda, b.data(), ldb, 0.0, blas.data(), ldc);
      RELPOS_INFO("m {} n {} k {} ta {} tb {} ldc {}", m, n, k, ta, tb, ldc);
      // The gaps between rows are not c's: both leave their NaN.
      CHECK(std::memcmp(ours.data(), blas.data(), sizeof(T) * ours.size()) == 0);
    }
  };
  check(1.0f);
  check(1.0);
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

TEST_CASE("matmul: CUDA matches CPU for every transpose pair, strided and broadcast operands") {
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const double t = tol(dtype);  // K <= 9 products: both backends round like the naive loop
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("trans_a " << ta << " trans_b " << tb);
        const Tensor a = test::random_tensor(stored({3}, 7, 5, ta), dtype, 61);
        const Tensor b = test::random_tensor(stored({3}, 5, 9, tb), dtype, 62);
        test::check_cuda_matches_cpu(
            "matmul/bmm with trans flags",
            [&](const std::vector<Tensor>& in) {
              return std::vector{matmul(in[0], in[1], ta, tb), bmm(in[0], in[1], ta, tb)};
            },
            {a, b}, t, t);
      }
    const Tensor a = test::random_tensor({3, 7, 5}, dtype, 63);
    const Tensor b = test::random_tensor({3, 5, 9}, dtype, 64);
    test::check_cuda_matches_cpu(
        "matmul of strided, transposed-storage and stepped views",
        [](const std::vector<Tensor>& in) {
          const Tensor big = in[2];  // [3, 14, 15] -> stepped [3, 7, 5]: no unit stride, copied
          return std::vector{
              matmul(test::strided_copy(in[0]), test::strided_copy(in[1])),
              matmul(in[0].transpose(1, 2).contiguous().transpose(1, 2), in[1]),
              matmul(in[0].transpose(1, 2), in[1].transpose(1, 2).contiguous(), true, true),
              matmul(big.slice(1, 0, 14, 2).slice(2, 1, 15, 3), in[1])};
        },
        {a, b, test::random_tensor({3, 14, 15}, dtype, 65)}, t, t);
    test::check_cuda_matches_cpu(
        "matmul with broadcast batches (stride 0), row-broadcast matrices and a shared 2-D b",
        [](const std::vector<Tensor>& in) {
          const Tensor x = in[0];  // [2, 3, 7, 5]
          return std::vector{
              bmm(in[1].expand({3, 7, 5}), in[3]),  // batch stride 0
              bmm(in[2].expand({3, 7, 5}), in[3]),  // row stride 0: copied
              matmul(in[0].slice(1, 0, 1), in[3]),  // [2, 1, 7, 5] @ [3, 5, 9]
              matmul(x, in[4], false, true),        // folded into one GEMM
              matmul(x.slice(-1, 1, 4), in[4].slice(1, 0, 3), false, true),  // strided fold
              matmul(in[4], x, false, true)};  // [4, 5] @ [..., 7, 5]^T
        },
        {test::random_tensor({2, 3, 7, 5}, dtype, 66), test::random_tensor({1, 7, 5}, dtype, 67),
         test::random_tensor({3, 1, 5}, dtype, 68), b, test::random_tensor({4, 5}, dtype, 69)},
        t, t);
  }
}

TEST_CASE("matmul: CUDA matches CPU on a 513x257x129 product, batched and transposed") {
  // f32 dot products of K = 257 terms in [-1, 1] (results ~5): cuBLAS and OpenBLAS sum in
  // different orders, each within ~sqrt(K) eps |partial sums| ~ 1e-5 of the exact value
  // (K eps sum|ab| ~ 1e-3 in the worst case); 1e-4 absolute keeps a margin over the typical
  // error, while a wrong layout gives O(1) errors. f64: the same at eps 1e-16.
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const double atol = dtype == DType::f32 ? 1e-4 : 1e-12;
    const Tensor a = test::random_tensor({2, 513, 257}, dtype, 71);
    const Tensor b = test::random_tensor({2, 257, 129}, dtype, 72);
    test::check_cuda_matches_cpu(
        "513x257x129 matmul",
        [](const std::vector<Tensor>& in) {
          return std::vector{matmul(in[0], in[1]),
                             matmul(in[0].transpose(1, 2).contiguous(), in[1], true, false),
                             matmul(in[0], in[1].select(0, 1)),  // one GEMM over 1026 rows
                             matmul(in[0].transpose(1, 2), in[1].transpose(1, 2), true, true)};
        },
        {a, b}, 1e-5, atol);
  }
}

TEST_CASE("matmul: CUDA K = 0 gives zeros and empty M, N, batch give empty outputs") {
  for (DType dtype : kFloating)
    test::check_cuda_matches_cpu(
        "matmul with empty dims",
        [](const std::vector<Tensor>& in) {
          const DType dt = in[0].dtype();
          const Device dev = in[0].device();
          const Tensor a = zeros({2, 3, 0}, dt, dev), b = zeros({2, 0, 4}, dt, dev);
          // Garbage where the K = 0 output will likely go (a block freed at once is reused
          // first): the kernel must zero it.
          full({2, 3, 4}, 7.0, dt, dev);
          return std::vector{matmul(a, b), matmul(zeros({0, 5}, dt, dev), in[0]),
                             matmul(zeros({3, 5}, dt, dev), in[0].slice(1, 0, 0)),
                             bmm(zeros({0, 3, 5}, dt, dev), zeros({0, 5, 4}, dt, dev))};
        },
        {test::random_tensor({5, 4}, dtype, 73)}, 0, 0);
}

TEST_CASE("matmul: CUDA transposed views reach cuBLAS without a copy") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA matmul memory check");
    return;
  }
  const Device gpu = Device::cuda(0);
  const Tensor a = test::random_tensor({4, 33, 17}, DType::f32, 74).to(gpu);
  const Tensor b = test::random_tensor({4, 33, 19}, DType::f32, 75).to(gpu);
  synchronize(gpu);
  reset_peak_memory(gpu);
  const int64_t before = memory_stats(gpu).current_bytes;
  const Tensor out = matmul(a.transpose(1, 2), b.transpose(1, 2).transpose(1, 2));  // [4, 17, 19]
  // Only the output is allocated: a copy of either operand would raise the peak further.
  CHECK(memory_stats(gpu).peak_bytes - before == out.numel() * 4);
  CHECK_CLOSE(out.to(Device::cpu()),
              naive_matmul(a.to(Device::cpu()), b.to(Device::cpu()), true, false), 1e-5, 1e-5);
}

TEST_CASE("matmul: TF32 is off by default, so CUDA f32 GEMMs round like the CPU's") {
  CHECK_FALSE(allow_tf32());
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): TF32 on/off check");
    return;
  }
  const Tensor a = test::random_tensor({300, 257}, DType::f32, 76);
  const Tensor b = test::random_tensor({257, 200}, DType::f32, 77);
  const Tensor want = naive_matmul(a, b, false, false);
  const Tensor a_gpu = a.to(Device::cuda(0)), b_gpu = b.to(Device::cuda(0));
  // Off: fp32 products (error ~1e-5, see the 513x257x129 case). On: TF32 keeps 10 mantissa bits
  // of each operand (relative error 2^-11 per product), ~1e-2 over 257 terms.
  CHECK_CLOSE(matmul(a_gpu, b_gpu).to(Device::cpu()), want, 1e-5, 1e-4);
  set_allow_tf32(true);
  CHECK(allow_tf32());
  const Tensor tf32 = matmul(a_gpu, b_gpu).to(Device::cpu());
  set_allow_tf32(false);
  CHECK_CLOSE(tf32, want, 1e-2, 5e-2);
  CHECK_FALSE(allow_tf32());
  CHECK_CLOSE(matmul(a_gpu, b_gpu).to(Device::cpu()), want, 1e-5, 1e-4);  // off again
}

TEST_CASE("matmul: CUDA operands with bad dtypes or shapes throw naming the op") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA matmul errors");
    return;
  }
  const Device gpu = Device::cuda(0);
  CHECK_THROWS_WITH_AS(matmul(zeros({3, 4}, DType::i64, gpu), zeros({4, 2}, DType::i64, gpu)),
                       doctest::Contains("[matmul]"), Error);
  CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}, DType::f32, gpu), zeros({2, 5, 2}, DType::f32, gpu)),
                       doctest::Contains("[bmm] inner dimensions differ"), Error);
}

TEST_CASE("matmul: the same bits at 1, 2 and 3 threads (the split depends on the shape only)") {
  // Row blocks, column blocks (n > m), transposed and batched operands, and a size split in 16.
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {{{300, 200}, {200, 250}, false, false},
                                   {{40, 700}, {700, 600}, false, false},
                                   {{200, 300}, {250, 200}, true, true},
                                   {{6, 50, 64}, {6, 70, 64}, false, true},
                                   {{1030, 129}, {129, 517}, false, false}};
  const int before = omp_get_max_threads();
  for (const Case& c : cases)
    for (DType dt : {DType::f32, DType::f64}) {
      RELPOS_INFO("{} x {} ta {} tb {} {}", shape_str(c.a), shape_str(c.b), c.ta, c.tb,
                  dtype_name(dt));
      const Tensor a = test::random_tensor(c.a, dt, 81), b = test::random_tensor(c.b, dt, 82);
      std::vector<std::vector<double>> results;
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        results.push_back(matmul(a, b, c.ta, c.tb).to_vector<double>());
      }
      CHECK(results[0] == results[1]);
      CHECK(results[0] == results[2]);
    }
  omp_set_num_threads(before);
}
