// Argument checks shared by the op entry points; each error names the op and the values.
#pragma once

#include <initializer_list>

#include "core/tensor.h"

namespace relpos {

void check_defined(const char* op, const Tensor& x, const char* name = "input");
// All tensors on one device; the error names both devices.
void check_same_device(const char* op, std::initializer_list<const Tensor*> xs);
// All tensors of one dtype; the error names both dtypes.
void check_same_dtype(const char* op, std::initializer_list<const Tensor*> xs);
void check_floating(const char* op, const Tensor& x);
// Not bf16, which only casts, elementwise arithmetic and matrix products take (core/bf16.h).
void check_not_bf16(const char* op, const Tensor& x);
void check_index_dtype(const char* op, const Tensor& index);  // i32 or i64

}  // namespace relpos
