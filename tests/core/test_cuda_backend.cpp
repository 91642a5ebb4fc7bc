// The CUDA backend's own machinery: exact byte counting in the caching allocator, transfers
// (larger than the pinned staging chunk, strided sources, uploads that return before their copy
// runs), identical Philox streams on both
// devices, and errors for mixed devices. Every case skips visibly without a GPU, but for the one
// that opens cuBLAS.
#include "tests/harness.h"

using namespace relpos;

namespace {
bool skip_without_gpu(const char* what) {
  if (cuda_available()) return false;
  MESSAGE("SKIPPED (no CUDA device): " << std::string(what));  // a char* prints as a pointer
  return true;
}
const Device kGpu = Device::cuda(0);
}  // namespace

TEST_CASE("cuda allocator: current and peak bytes are exact, cached blocks are reused") {
  if (skip_without_gpu("cuda allocator accounting")) return;
  synchronize(kGpu);
  const int64_t base = memory_stats(kGpu).current_bytes;
  reset_peak_memory(kGpu);
  {
    const Tensor a = Tensor::empty({1000}, DType::f32, kGpu);  // 4000 bytes
    const Tensor b = Tensor::empty({3, 7}, DType::f64, kGpu);  // 168 bytes
    CHECK(memory_stats(kGpu).current_bytes == base + 4168);
    {
      const Tensor c = Tensor::empty({1 << 20}, DType::u8, kGpu);  // 1 MiB
      CHECK(memory_stats(kGpu).peak_bytes == base + 4168 + (1 << 20));
    }
    CHECK(memory_stats(kGpu).current_bytes == base + 4168);
    CHECK(cached_bytes(kGpu) >= (1 << 20));  // c's block stays in the cache
    const int64_t cached = cached_bytes(kGpu);
    const Tensor d = Tensor::empty({1 << 20}, DType::u8, kGpu);  // served from the cache
    CHECK(cached_bytes(kGpu) == cached - (2 << 20));  // 1 MiB requests use 2 MiB granules
  }
  CHECK(memory_stats(kGpu).current_bytes == base);
  CHECK(memory_stats(kGpu).peak_bytes == base + 4168 + (1 << 20));
  empty_cache(kGpu);
  CHECK(cached_bytes(kGpu) == 0);
}

TEST_CASE("cuda transfers: round trip through the pinned buffer, larger than one chunk") {
  if (skip_without_gpu("cuda transfers")) return;
  const Tensor x = test::random_tensor({10, 1 << 20}, DType::f32, 3);  // 40 MiB: 10 chunks
  const Tensor back = x.to(kGpu).to(Device::cpu());
  CHECK(back.to_vector<float>() == x.to_vector<float>());
  const Tensor s = test::strided_copy(test::random_tensor({7, 9, 11}, DType::f64, 4));
  CHECK(s.to(kGpu).to(Device::cpu()).to_vector<double>() == s.to_vector<double>());
  CHECK(s.to(kGpu).is_contiguous());
  const Tensor ids = Tensor::from_vector<int64_t>({3, -1, 7}, {3});
  CHECK(ids.to(kGpu).to_vector<int64_t>() == std::vector<int64_t>{3, -1, 7});
}

TEST_CASE("cuda transfers: an upload owns its bytes when it returns, past the ring of buffers") {
  if (skip_without_gpu("cuda uploads without a stream sync")) return;
  // Each upload returns before its copy ran; the source may change or go at once. Twenty
  // uploads pass the 8 staging buffers twice, so buffers are reused while copies are queued
  // behind a long kernel.
  const Tensor busy = test::random_tensor({2048, 2048}, DType::f32, 5).to(kGpu);
  std::vector<Tensor> on_gpu;
  std::vector<std::vector<float>> sent;
  const Tensor product = matmul(busy, busy);  // keeps the stream busy while the copies queue
  for (int i = 0; i < 20; ++i) {
    Tensor host = test::random_tensor({1000 + i}, DType::f32, 100 + i);
    sent.push_back(host.to_vector<float>());
    on_gpu.push_back(host.to(kGpu));
    host.data<float>()[0] = -1;  // changed after the call: the device keeps what was sent
  }
  for (int i = 0; i < 20; ++i) CHECK(on_gpu[i].to_vector<float>() == sent[i]);
  CHECK(product.to(Device::cpu()).numel() == 2048 * 2048);
}

TEST_CASE("cuda philox: rand, randn and dropout masks match the CPU for the same seed") {
  if (skip_without_gpu("cuda philox streams")) return;
  Generator g1(42), g2(42);
  CHECK(rand({1001}, g1, -2, 3, DType::f32).to_vector<float>() ==
        rand({1001}, g2, -2, 3, DType::f32, kGpu).to_vector<float>());
  CHECK(g1.offset() == g2.offset());
  CHECK(dropout_mask({77, 13}, 0.3, g1).to_vector<uint8_t>() ==
        dropout_mask({77, 13}, 0.3, g2, kGpu).to_vector<uint8_t>());
  // Normals go through log/cos, whose last bit may differ between libm and CUDA's math.
  CHECK_CLOSE(randn({999}, g2, 0, 1, DType::f64, kGpu).to(Device::cpu()),
              randn({999}, g1, 0, 1, DType::f64), 1e-12, 1e-12);
}

TEST_CASE("cuda ops: mixing devices is an error naming the op and both devices") {
  if (skip_without_gpu("cuda device-mismatch errors")) return;
  const Tensor a = zeros({3}), b = zeros({3}, DType::f32, kGpu);
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("[add]"), Error);
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("cuda:0"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 2}), zeros({2, 2}, DType::f32, kGpu)),
                       doctest::Contains("[matmul]"), Error);
  CHECK_THROWS_WITH_AS(zeros({2}).to(Device::cuda(99)), doctest::Contains("cuda:99"), Error);
}

TEST_CASE("cuda ops: elementwise on strided and broadcast views match the CPU") {
  const Tensor a = test::strided_copy(test::random_tensor({6, 5, 7}, DType::f32, 5));
  const Tensor b = test::random_tensor({5, 1}, DType::f32, 6);
  test::check_cuda_matches_cpu(
      "elementwise chain",
      [](const std::vector<Tensor>& in) {
        const Tensor s = add(mul(in[0], in[1]), exp(in[1]));
        return std::vector<Tensor>{s, gelu(s), where(gt(s, in[1]), s, in[1]), cast(s, DType::f64)};
      },
      {a, b});
}

#ifdef RELPOS_WITH_CUDA
#include <dlfcn.h>

#include "core/cuda/cublas_library.h"

TEST_CASE("cuBLAS: opened on first use, with every entry point relpos calls (no GPU needed)") {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  // Not linked: a process that has used no CUDA device has not loaded it.
  if (!cuda_available()) CHECK(dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD) == nullptr);
  const cuda::CublasLibrary& l = cuda::cublas();
  const auto resolved = [](auto entry_point) { return entry_point != nullptr; };
  CHECK(dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD) != nullptr);
  CHECK(resolved(l.create));
  CHECK(resolved(l.destroy));
  CHECK(resolved(l.set_stream));
  CHECK(resolved(l.set_math_mode));
  CHECK(resolved(l.sgemm_strided_batched));
  CHECK(resolved(l.dgemm_strided_batched));
  CHECK(resolved(l.gemm_strided_batched_ex));
  if (l.status_string != nullptr)  // cuBLAS 11.6 on
    CHECK(std::string(l.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized") !=
          std::string::npos);
}
#endif
