#include "core/ops/validate.h"

namespace relpos {

void check_defined(const char* op, const Tensor& x, const char* name) {
  RELPOS_CHECK(x.defined(), op, "{} is an undefined tensor", name);
}

void check_same_device(const char* op, std::initializer_list<const Tensor*> xs) {
  const Tensor* first = nullptr;
  for (const Tensor* x : xs) {
    check_defined(op, *x);
    if (first == nullptr) first = x;
    RELPOS_CHECK(x->device() == first->device(), op,
                 "tensors are on different devices: {} and {} (move one with .to(device))",
                 first->str(), x->str());
  }
}

void check_same_dtype(const char* op, std::initializer_list<const Tensor*> xs) {
  const Tensor* first = nullptr;
  for (const Tensor* x : xs) {
    check_defined(op, *x);
    if (first == nullptr) first = x;
    RELPOS_CHECK(x->dtype() == first->dtype(), op,
                 "dtypes differ: {} and {} (convert one with cast)", first->str(), x->str());
  }
}

void check_floating(const char* op, const Tensor& x) {
  check_defined(op, x);
  RELPOS_CHECK(is_floating(x.dtype()), op, "expects a floating tensor (f32 or f64), got {}",
               x.str());
}

void check_not_bf16(const char* op, const Tensor& x) {
  RELPOS_CHECK(x.dtype() != DType::bf16, op,
               "has no bf16 kernel ({}); bf16 tensors take casts, elementwise arithmetic and "
               "matrix products: cast to f32 first",
               x.str());
}

void check_index_dtype(const char* op, const Tensor& index) {
  check_defined(op, index, "index");
  RELPOS_CHECK(index.dtype() == DType::i32 || index.dtype() == DType::i64, op,
               "index must be i32 or i64, got {}", index.str());
}

}  // namespace relpos
