// Entry points: matmul (batch dims broadcast) and bmm (strictly 3-D). Both bring their operands
// to [B, rows, cols] views (batch stride 0 where broadcast) and call the backend's batched GEMM.
// bf16 operands: CUDA multiplies them as they are; the CPU converts them to f32 (exact) first.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

void check_operands(const char* op, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                    DType out_dtype) {
  check_same_device(op, {&a, &b});
  check_same_dtype(op, {&a, &b});
  check_defined(op, a);
  RELPOS_CHECK(is_floating_or_bf16(a.dtype()), op,
               "expects floating operands (f32, f64 or bf16), got {}", a.str());
  RELPOS_CHECK(out_dtype == a.dtype() || (a.dtype() == DType::bf16 && out_dtype == DType::f32), op,
               "cannot return {} operands' product as {} (bf16 operands may give f32)",
               dtype_name(a.dtype()), dtype_name(out_dtype));
  RELPOS_CHECK(a.dim() >= 2 && b.dim() >= 2, op,
               "operands need at least 2 dims (unsqueeze 1-D ones), got a {} and b {}", a.str(),
               b.str());
  const int64_t ka = trans_a ? a.size(-2) : a.size(-1);
  const int64_t kb = trans_b ? b.size(-1) : b.size(-2);
  RELPOS_CHECK(ka == kb, op, "inner dimensions differ: a is {}{}, b is {}{}", shape_str(a.shape()),
               trans_a ? " (transposed)" : "", shape_str(b.shape()),
               trans_b ? " (transposed)" : "");
}

// x: [..., r, c] broadcast to [*batch, r, c] and viewed (copied only when the broadcast batch
// dims cannot be flattened into one stride) as [B, r, c].
Tensor as_batched(const Tensor& x, const Shape& batch) {
  Shape full = batch;
  full.push_back(x.size(-2));
  full.push_back(x.size(-1));
  return x.expand(full).reshape({shape_numel(batch), x.size(-2), x.size(-1)});
}

// When a's batch dims and row dim are laid out as one strided dim, a: [..., M, K] can be seen as
// one [1, B*M, K] matrix, so a product with a shared 2-D b is a single GEMM. Returns that row
// stride, or 0 when the dims do not fold.
int64_t folded_row_stride(const Tensor& a) {
  int64_t row_stride = -1, expect = 0;
  for (int d = a.dim() - 2; d >= 0; --d) {
    if (a.size(d) == 1) continue;
    if (row_stride < 0)
      row_stride = a.stride(d);
    else if (a.stride(d) != expect)
      return 0;
    expect = a.stride(d) * a.size(d);
  }
  return row_stride < 0 ? a.stride(-2) : row_stride;  // one row: any stride will do
}

// a3: [B, M, K] (or [B, K, M]), b3: [B, K, N] (or [B, N, K]) -> [B, M, N]. On the CPU, a3 and b3
// may also be [B1, B2, ., .] with B = B1 B2 (core/gemm_operand.h).
Tensor batched_matmul(const Tensor& a3, const Tensor& b3, bool trans_a, bool trans_b,
                      DType out_dtype) {
  const int64_t m = trans_a ? a3.size(-1) : a3.size(-2);
  const int64_t n = trans_b ? b3.size(-2) : b3.size(-1);
  int64_t batch = 1;
  for (int64_t d = 0; d + 2 < a3.dim(); ++d) batch *= a3.size(d);
  Tensor out = Tensor::empty({batch, m, n}, out_dtype, a3.device());
  if (a3.device().is_cpu())
    cpu::matmul(a3, b3, trans_a, trans_b, out);
  else
    cuda::matmul(a3, b3, trans_a, trans_b, out);
  return out;
}

// bf16 on the CPU: the f32 product of the converted operands, rounded to out_dtype.
bool cpu_bf16(const Tensor& a) {
  return a.dtype() == DType::bf16 && a.device().is_cpu();
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  check_defined("matmul", a);
  return matmul(a, b, trans_a, trans_b, a.dtype());
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType out_dtype) {
  check_operands("matmul", a, b, trans_a, trans_b, out_dtype);
  if (cpu_bf16(a))
    return cast(matmul(cast(a, DType::f32), cast(b, DType::f32), trans_a, trans_b), out_dtype);
  const int64_t m = trans_a ? a.size(-1) : a.size(-2);
  const int64_t n = trans_b ? b.size(-2) : b.size(-1);
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape out_shape = broadcast_shapes(a_batch, b_batch, "matmul");
  const int64_t batch = shape_numel(out_shape);
  out_shape.push_back(m);
  out_shape.push_back(n);

  // x: [..., M, K] @ w: [K, N] (a linear layer): one GEMM over all rows.
  const int64_t row_stride = b.dim() == 2 && !trans_a && a.dim() > 2 ? folded_row_stride(a) : 0;
  if (row_stride != 0) {
    const Tensor a3 =
        a.as_strided({1, batch * m, a.size(-1)}, {0, row_stride, a.stride(-1)}, a.offset());
    return batched_matmul(a3, b.unsqueeze(0), false, trans_b, out_dtype).view(out_shape);
  }
  const Shape batch_shape(out_shape.begin(), out_shape.end() - 2);
  if (batch_shape.size() == 2 && a.device().is_cpu()) {
    // Two batch dims, such as [B, H] of heads split from [B, L, H·D], whose strides do not fold
    // into one (as_batched would copy): the CPU kernel takes them as they are.
    const auto four_d = [&](const Tensor& x) {
      return x.expand({batch_shape[0], batch_shape[1], x.size(-2), x.size(-1)});
    };
    return batched_matmul(four_d(a), four_d(b), trans_a, trans_b, out_dtype).view(out_shape);
  }
  return batched_matmul(as_batched(a, batch_shape), as_batched(b, batch_shape), trans_a, trans_b,
                        out_dtype)
      .view(out_shape);
}

Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  check_defined("bmm", a);
  return bmm(a, b, trans_a, trans_b, a.dtype());
}

Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType out_dtype) {
  check_operands("bmm", a, b, trans_a, trans_b, out_dtype);
  RELPOS_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0), "bmm",
               "expects [B, M, K] and [B, K, N] with one B, got a {} and b {}", a.str(), b.str());
  if (cpu_bf16(a))
    return cast(bmm(cast(a, DType::f32), cast(b, DType::f32), trans_a, trans_b), out_dtype);
  return batched_matmul(a, b, trans_a, trans_b, out_dtype);
}

}  // namespace relpos
