#include "core/dtype.h"

namespace relpos {

size_t dtype_size(DType t) {
  RELPOS_CHECK(static_cast<int>(t) <= static_cast<int>(DType::bf16), "dtype",
               "invalid dtype value {}", static_cast<int>(t));
  return visit_dtype_or_bf16(t, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::bf16:
      return "bf16";
  }
  return "invalid";
}

DType dtype_from_name(const std::string& name) {
  if (name == "f32" || name == "float32" || name == "float") return DType::f32;
  if (name == "f64" || name == "float64" || name == "double") return DType::f64;
  if (name == "i32" || name == "int32") return DType::i32;
  if (name == "i64" || name == "int64") return DType::i64;
  if (name == "u8" || name == "uint8") return DType::u8;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  fail("dtype", "unknown dtype '{}'; known: f32, f64, i32, i64, u8, bf16", name);
}

void no_bf16_kernel(const char* op) {
  fail("dtype",
       "no bf16 kernel for {}: bf16 tensors take casts, fill, elementwise arithmetic and matrix "
       "products; cast to f32 first",
       op);
}

}  // namespace relpos
