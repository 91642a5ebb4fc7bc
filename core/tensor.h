// Tensor: a handle to shared Storage plus offset, shape, strides, dtype and device.
// Views (reshape, transpose, permute, slice, expand, diagonal, as_strided) share the storage;
// contiguous() copies only when the layout is not already row-major dense.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/storage.h"

namespace relpos {

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides, DType dtype);

  // A new, uninitialized, contiguous tensor (counted by the device's allocator).
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  // A CPU tensor holding `values` (row-major) with `shape`, moved to `device`.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device::cpu());
  // A 0-dim tensor.
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;  // in elements
  int64_t numel() const { return shape_numel(shape_); }
  int64_t offset() const { return offset_; }  // in elements
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::string str() const;  // "f32[2, 3] cpu" (for error messages)

  // Pointer to element [0, ..., 0]. data<T>() checks that T matches dtype().
  void* raw_data() const;
  template <typename T>
  T* data() const;
  // The single element of a CPU tensor with numel() == 1, converted to double.
  double item() const;
  // All elements in row-major order, converted to T (copies to the CPU if needed).
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- views (share storage) ----
  Tensor view(const Shape& shape) const;     // errors when the strides do not allow it
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy; one -1 allowed
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // removes dim
  Tensor expand(const Shape& shape) const;          // size-1 dims broadcast with stride 0
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;  // dim must have size 1
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor diagonal(int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1) const;
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;

  // ---- copies ----
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;

 private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::f32;
};

template <typename T>
T* Tensor::data() const {
  RELPOS_CHECK(dtype_of<T>() == dtype_, "tensor", "data<{}>() on a {} tensor",
               dtype_name(dtype_of<T>()), dtype_name(dtype_));
  return static_cast<T*>(raw_data());
}

}  // namespace relpos
