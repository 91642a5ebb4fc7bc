// The dtype enum and the C++ type <-> DType mapping, without the formatting and error machinery
// of dtype.h, so CUDA kernel sources (which cannot include fmt) can use them.
#pragma once

#include <cstdint>
#include <type_traits>

namespace relpos {

enum class DType : uint8_t { f32, f64, i32, i64, u8 };

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
  else {
    static_assert(std::is_same_v<T, uint8_t>, "relpos has no such dtype");
    return DType::u8;
  }
}

// Calls f(TypeTag<T>{}) for the C++ type T of `t`. Unlike dispatch_dtype (dtype.h) it cannot
// report an invalid value; callers pass dtypes the entry points have validated.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
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

}  // namespace relpos
