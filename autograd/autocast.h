// Mixed precision for matrix products, in the manner of PyTorch's bf16 autocast for its matmul
// list (train.precision: bf16). Inside an AutocastGuard(DType::bf16) scope the products of
// autograd (matmul, bmm, the fused feed-forward's fc2) round their f32 operands to bf16, keep them
// in bf16 for the backward, and sum in f32 into an f32 result; the backward's products round the
// incoming gradient the same way. The fused attention op (autograd/functions/attention.cpp) takes
// its operands rounded the same way and computes in f32 (its softmax and log-sum-exp included).
// Everything else (softmax, LayerNorm, losses, FFTs, reductions, parameters, gradients, optimizer
// state) stays in f32. f64 is never rounded.
// Unlike PyTorch the products' results are not rounded to bf16 (the activations between products
// stay in f32, so chiefly the operands saved for the backward are held in half the bytes), with
// one exception: the transformer MLP's fused node (activation_dropout_linear) rounds fc1's output,
// its largest activation, and keeps it in bf16 as PyTorch would.
#pragma once

#include "core/tensor.h"

namespace relpos {

// The dtype products round their f32 operands to: f32 (no rounding, the default) or bf16.
// Per thread.
DType autocast_dtype();

// Sets autocast_dtype() for its scope; dtype is f32 or bf16.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DType previous_;
};

// x as a product stores it: rounded to bf16 in a bf16 scope when x is f32, x itself otherwise.
Tensor autocast_operand(const Tensor& x);

// a op(·) b (matmul, or bmm when batched) in a's dtype; where either operand is bf16, the other
// (f32) is rounded to bf16 too and the result is their f32-accumulated product in f32.
Tensor product(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, bool batched = false);

}  // namespace relpos
