// The dtype enum and the C++ type <-> DType mapping, without the formatting and error machinery
// of dtype.h, so CUDA kernel sources (which cannot include fmt) can use them.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/bf16.h"

namespace relpos {

// bf16 comes last, so the stored values of the others stay as they were.
enum class DType : uint8_t { f32, f64, i32, i64, u8, bf16 };

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, bf16>)
    return DType::bf16;
  else {
    static_assert(std::is_same_v<T, uint8_t>, "relpos has no such dtype");
    return DType::u8;
  }
}

// Throws "[dtype] no bf16 kernel for <op>" (dtype.cpp): a bf16 tensor reached a kernel without a
// bf16 form that its entry point let through.
[[noreturn]] void no_bf16_kernel(const char* op);

// Calls f(TypeTag<T>{}) for the C++ type T of `t`, one of f32, f64, i32, i64 and u8; bf16, which
// only casts, elementwise arithmetic and matrix products take (visit_dtype_or_bf16), throws.
// Unlike dispatch_dtype (dtype.h) it cannot report an invalid value; callers pass dtypes the
// entry points have validated.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::bf16:
      no_bf16_kernel("this op");
    case DType::f64:
      return f(TypeTag<double>{});
    case DType::i32:
      return f(TypeTag<int32_t>{});
    case DType::i64:
      return f(TypeTag<int64_t>{});
    case DType::u8:
      return f(TypeTag<uint8_t>{});
    default:
      return f(TypeTag<float>{});
  }
}

// visit_dtype, with bf16 as TypeTag<bf16>.
template <typename F>
decltype(auto) visit_dtype_or_bf16(DType t, F&& f) {
  if (t == DType::bf16) return f(TypeTag<bf16>{});
  return visit_dtype(t, static_cast<F&&>(f));
}

}  // namespace relpos
