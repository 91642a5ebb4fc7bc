#include "core/tensor.h"

#include <algorithm>
#include <numeric>

#include "core/ops.h"
#include "core/transfers.h"

namespace relpos {

Tensor::Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides,
               DType dtype)
    : storage_(std::move(storage)),
      offset_(offset),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      dtype_(dtype) {}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape)
    RELPOS_CHECK(s >= 0, "empty", "negative size in shape {}", shape_str(shape));
  // Bytes beyond int64's range are beyond any memory: refused like the allocators refuse (by
  // type), before a wrapped product could ask for a small buffer.
  const std::optional<int64_t> numel = checked_numel(shape);
  int64_t bytes = 0;
  if (!numel || __builtin_mul_overflow(*numel, dtype_size(dtype), &bytes))
    fail<OutOfMemory>("tensor", "{}{} would take more bytes than int64 counts", dtype_name(dtype),
                      shape_str(shape));
  const auto nbytes = static_cast<size_t>(bytes);
  return Tensor(std::make_shared<Storage>(nbytes, device), 0, shape, contiguous_strides(shape),
                dtype);
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  RELPOS_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector",
               "{} values do not fill shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, dtype_of<T>(), Device::cpu());
  std::copy(values.begin(), values.end(), t.data<T>());
  return device.is_cpu() ? t : t.to(device);
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<uint8_t>&, const Shape&, Device);

Tensor Tensor::scalar(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

int64_t Tensor::size(int64_t d) const {
  return shape_[normalize_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  return strides_[normalize_dim(d, dim(), "stride")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return fmt::format("{}{} {}", dtype_name(dtype_), shape_str(shape_), device().str());
}

void* Tensor::raw_data() const {
  RELPOS_CHECK(defined(), "tensor", "access to the data of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

double Tensor::item() const {
  RELPOS_CHECK(numel() == 1, "item", "expects one element, tensor is {}", str());
  count_host_read();
  const Tensor t = device().is_cpu() ? *this : to(Device::cpu());
  return visit_dtype_or_bf16(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(*t.data<T>());
  });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  count_host_read();
  const Tensor t = to(Device::cpu()).to(dtype_of<T>()).contiguous();
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;
template std::vector<uint8_t> Tensor::to_vector() const;

// ---------------------------------------------------------------- views

namespace {

// Resolves one -1 entry of `shape` against numel.
Shape infer_shape(Shape shape, int64_t numel, const Shape& from) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RELPOS_CHECK(infer < 0, "reshape", "more than one -1 in {}", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      RELPOS_CHECK(shape[i] >= 0, "reshape", "negative size in {}", shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    RELPOS_CHECK(known != 0 && numel % known == 0, "reshape", "cannot reshape {} into {}",
                 shape_str(from), shape_str(shape));
    shape[infer] = numel / known;
  }
  RELPOS_CHECK(shape_numel(shape) == numel, "reshape", "cannot reshape {} ({} elements) into {}",
               shape_str(from), numel, shape_str(shape));
  return shape;
}

// Strides that view (shape, strides) as new_shape without a copy, or empty if impossible.
// Old dims are grouped into runs that are contiguous among themselves ("chunks"); every chunk
// must be covered exactly by consecutive new dims, which then inherit the chunk's base stride.
Shape view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape) {
  if (shape.empty() || shape_numel(shape) == 0) return contiguous_strides(new_shape);
  Shape out(new_shape.size());
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    const bool chunk_ends =
        d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return {};
    if (d > 0) {
      chunk_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return {};
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  const Shape target = infer_shape(shape, numel(), shape_);
  Shape st = view_strides(shape_, strides_, target);
  RELPOS_CHECK(!st.empty() || target.empty(), "view",
               "cannot view {} with strides {} as {} without a copy; use reshape",
               shape_str(shape_), shape_str(strides_), shape_str(target));
  return Tensor(storage_, offset_, target, std::move(st), dtype_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape target = infer_shape(shape, numel(), shape_);
  Shape st = view_strides(shape_, strides_, target);
  if (!st.empty() || target.empty())
    return Tensor(storage_, offset_, target, std::move(st), dtype_);
  return contiguous().view(target);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const int a = normalize_dim(d0, dim(), "transpose"), b = normalize_dim(d1, dim(), "transpose");
  Shape sh = shape_, st = strides_;
  std::swap(sh[a], sh[b]);
  std::swap(st[a], st[b]);
  return Tensor(storage_, offset_, std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  RELPOS_CHECK(static_cast<int>(dims.size()) == dim(), "permute",
               "got {} dims for a tensor of rank {}", dims.size(), dim());
  Shape sh(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = normalize_dim(dims[i], dim(), "permute");
    RELPOS_CHECK(!seen[d], "permute", "dim {} repeated in [{}]", d, fmt::join(dims, ", "));
    seen[d] = true;
    sh[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, offset_, std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  const int a = normalize_dim(d, dim(), "slice");
  const int64_t n = shape_[a];
  RELPOS_CHECK(step > 0, "slice", "step must be positive, got {}", step);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sh = shape_, st = strides_;
  sh[a] = (end - start + step - 1) / step;
  st[a] = strides_[a] * step;
  return Tensor(storage_, offset_ + start * strides_[a], std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  const int a = normalize_dim(d, dim(), "select");
  const int64_t i = index < 0 ? index + shape_[a] : index;
  RELPOS_CHECK(i >= 0 && i < shape_[a], "select", "index {} out of range for dim {} of {}", index,
               a, str());
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + a);
  st.erase(st.begin() + a);
  return Tensor(storage_, offset_ + i * strides_[a], std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  RELPOS_CHECK(shape.size() >= shape_.size(), "expand", "cannot expand {} to {}", shape_str(shape_),
               shape_str(shape));
  const size_t lead = shape.size() - shape_.size();
  Shape st(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    const int64_t want = shape[lead + i];
    RELPOS_CHECK(shape_[i] == want || shape_[i] == 1, "expand", "cannot expand {} to {}",
                 shape_str(shape_), shape_str(shape));
    st[lead + i] = shape_[i] == want ? strides_[i] : 0;
  }
  return Tensor(storage_, offset_, shape, std::move(st), dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  const int a = normalize_dim(d, dim() + 1, "unsqueeze");
  Shape sh = shape_, st = strides_;
  const int64_t s = a < dim() ? strides_[a] * shape_[a] : 1;
  sh.insert(sh.begin() + a, 1);
  st.insert(st.begin() + a, s);
  return Tensor(storage_, offset_, std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  const int a = normalize_dim(d, dim(), "squeeze");
  RELPOS_CHECK(shape_[a] == 1, "squeeze", "dim {} of {} has size {}, not 1", a, str(), shape_[a]);
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + a);
  st.erase(st.begin() + a);
  return Tensor(storage_, offset_, std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  const int a = normalize_dim(start, dim(), "flatten"), b = normalize_dim(end, dim(), "flatten");
  RELPOS_CHECK(a <= b, "flatten", "start dim {} is after end dim {}", a, b);
  Shape sh(shape_.begin(), shape_.begin() + a);
  sh.push_back(
      std::accumulate(shape_.begin() + a, shape_.begin() + b + 1, int64_t{1}, std::multiplies<>()));
  sh.insert(sh.end(), shape_.begin() + b + 1, shape_.end());
  return reshape(sh);
}

Tensor Tensor::diagonal(int64_t offset, int64_t d0, int64_t d1) const {
  const int a = normalize_dim(d0, dim(), "diagonal"), b = normalize_dim(d1, dim(), "diagonal");
  RELPOS_CHECK(a != b, "diagonal", "dims must differ, both are {}", a);
  // Element k of the diagonal is [k, k + offset] (offset >= 0) or [k - offset, k].
  const int64_t len = offset >= 0 ? std::max<int64_t>(0, std::min(shape_[a], shape_[b] - offset))
                                  : std::max<int64_t>(0, std::min(shape_[a] + offset, shape_[b]));
  int64_t start = offset_;
  if (len > 0) start += offset >= 0 ? offset * strides_[b] : -offset * strides_[a];
  Shape sh, st;
  for (int i = 0; i < dim(); ++i) {
    if (i == a || i == b) continue;
    sh.push_back(shape_[i]);
    st.push_back(strides_[i]);
  }
  sh.push_back(len);
  st.push_back(strides_[a] + strides_[b]);
  return Tensor(storage_, start, std::move(sh), std::move(st), dtype_);
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  RELPOS_CHECK(shape.size() == strides.size(), "as_strided",
               "shape {} and strides {} differ in rank", shape_str(shape), shape_str(strides));
  // The largest element reached must lie inside the storage.
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    RELPOS_CHECK(shape[i] >= 0 && strides[i] >= 0, "as_strided",
                 "negative size or stride in {} / {}", shape_str(shape), shape_str(strides));
    if (shape[i] == 0)
      last = offset - 1;
    else
      last += (shape[i] - 1) * strides[i];
  }
  const int64_t capacity = static_cast<int64_t>(storage_->nbytes() / dtype_size(dtype_));
  RELPOS_CHECK(offset >= 0 && last < capacity, "as_strided",
               "view {} strides {} offset {} reaches past the storage of {} elements",
               shape_str(shape), shape_str(strides), offset, capacity);
  return Tensor(storage_, offset, shape, strides, dtype_);
}

// ---------------------------------------------------------------- copies

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  copy_(out, *this);
  return out;
}

Tensor Tensor::to(Device device) const {
  return to_device(*this, device);
}
Tensor Tensor::to(DType dtype) const {
  return cast(*this, dtype);
}

}  // namespace relpos
