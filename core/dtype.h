// Element types of a Tensor and a typed dispatch helper (dispatch_dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "core/dtype_id.h"
#include "core/error.h"

namespace relpos {

size_t dtype_size(DType t);
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);  // "f32", "float32", ... -> DType
// f32 and f64: the dtypes every floating op takes (bf16 is a storage dtype, see core/bf16.h).
inline bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64;
}
// The dtypes of elementwise arithmetic and matrix products: f32, f64 and bf16.
inline bool is_floating_or_bf16(DType t) {
  return is_floating(t) || t == DType::bf16;
}

// Calls f(TypeTag<T>{}) with T the C++ type of `t`:
//   dispatch_dtype(x.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  RELPOS_CHECK(static_cast<int>(t) <= static_cast<int>(DType::bf16), "dtype",
               "invalid dtype value {}", static_cast<int>(t));
  return visit_dtype(t, std::forward<F>(f));
}

// Same, restricted to f32/f64; other dtypes raise "[op] expects a floating dtype, got i64".
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      return f(TypeTag<float>{});
    case DType::f64:
      return f(TypeTag<double>{});
    case DType::bf16:
      no_bf16_kernel(op);
    default:
      fail(op, "expects a floating dtype (f32 or f64), got {}", dtype_name(t));
  }
}

}  // namespace relpos
