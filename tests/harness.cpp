#include "tests/harness.h"

#include <cstring>

#include <unistd.h>

#include <cmath>
#include <fstream>

namespace relpos::test {

ScratchDir::ScratchDir() {
  static int count = 0;
  path = std::filesystem::temp_directory_path() /
         ("relpos_test_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  std::ofstream(path / name) << text;
  return (path / name).string();
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double low, double high) {
  Generator gen(seed);
  return rand(shape, gen, low, high, dtype);
}

Tensor random_indices(const Shape& shape, int64_t bound, uint64_t seed, DType dtype) {
  Generator gen(seed);
  const Tensor u = rand(shape, gen, 0, static_cast<double>(bound), DType::f64);
  std::vector<int64_t> ids;
  for (double v : u.to_vector<double>()) ids.push_back(std::min<int64_t>(bound - 1, v));
  return cast(Tensor::from_vector(ids, shape), dtype);
}

Tensor strided_copy(const Tensor& x) {
  if (x.dim() == 0) return x.clone();
  // Buffer with the last dim doubled; x lives in its even columns.
  Shape big = x.shape();
  big.back() *= 2;
  Tensor buffer = zeros(big, x.dtype(), x.device());
  Tensor view = buffer.slice(-1, 0, big.back(), 2);
  copy_(view, x);
  if (x.dim() >= 2) {
    // Store the last two dims transposed, then view them back: strides are now permuted too.
    Shape tshape = x.shape();
    std::swap(tshape[tshape.size() - 1], tshape[tshape.size() - 2]);
    Tensor tbuf = zeros(tshape, x.dtype(), x.device());
    Tensor tview = tbuf.transpose(-1, -2);
    copy_(tview, view);
    return tview;
  }
  return view;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(Device::cpu()).contiguous(), y = b.to(Device::cpu()).contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), x.numel() * dtype_size(x.dtype())) == 0;
}

CloseReport compare_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  CloseReport r;
  if (actual.shape() != expected.shape()) {
    r.ok = false;
    r.detail = fmt::format("shape mismatch: actual {} expected {}", actual.str(), expected.str());
    return r;
  }
  const std::vector<double> a = actual.to_vector<double>(), b = expected.to_vector<double>();
  double worst = 0;
  size_t where_i = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    const bool same_inf = std::isinf(a[i]) && a[i] == b[i];
    if (both_nan || same_inf || a[i] == b[i]) continue;
    const double ratio = std::abs(a[i] - b[i]) / (atol + rtol * std::abs(b[i]));
    if (!(ratio <= worst)) {  // also catches NaN
      worst = std::isnan(ratio) ? INFINITY : ratio;
      where_i = i;
    }
  }
  r.ok = worst <= 1.0;
  if (!r.ok)
    r.detail = fmt::format("{}: worst element {} actual {:.9g} expected {:.9g} (rtol {} atol {})",
                           actual.str(), where_i, a[where_i], b[where_i], rtol, atol);
  return r;
}

void check_cuda_matches_cpu(const std::string& what,
                            const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& f,
                            const std::vector<Tensor>& cpu_inputs, double rtol, double atol) {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CPU==CUDA check of " << what);
    return;
  }
  std::vector<Tensor> gpu_inputs;
  for (const Tensor& t : cpu_inputs) gpu_inputs.push_back(t.to(Device::cuda(0)));
  const std::vector<Tensor> want = f(cpu_inputs), got = f(gpu_inputs);
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(what << " output " << i);
    CHECK(got[i].device() == Device::cuda(0));
    CHECK_CLOSE(got[i].to(Device::cpu()), want[i], rtol, atol);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace relpos::test
