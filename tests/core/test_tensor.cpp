// Tensor views and layout: reshape/view, transpose, permute, slice, expand, diagonal, as_strided.
#include <string>

#include "core/cpu/available_memory.h"
#include "tests/harness.h"

using namespace relpos;

namespace {
Tensor iota(const Shape& shape) {
  return arange(0, static_cast<double>(shape_numel(shape)), 1, DType::f32).reshape(shape);
}
}  // namespace

TEST_CASE("tensor: views share storage and index correctly") {
  const Tensor x = iota({2, 3, 4});
  CHECK(x.is_contiguous());
  const Tensor t = x.transpose(0, 2);  // [4, 3, 2]
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == x.storage());
  const std::vector<float> tv = t.contiguous().to_vector<float>();
  // t[i][j][k] = x[k][j][i] = k*12 + j*4 + i
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) CHECK(tv[(i * 3 + j) * 2 + k] == float(k * 12 + j * 4 + i));

  const Tensor s = x.slice(2, 1, 4, 2);  // columns 1, 3
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});

  const Tensor p = x.permute({1, 2, 0});
  CHECK(p.shape() == Shape{3, 4, 2});
  CHECK(p.select(0, 1).select(0, 2).to_vector<float>() == std::vector<float>{6, 18});

  const Tensor e = iota({3, 1}).expand({2, 3, 4});
  CHECK(e.stride(0) == 0);
  CHECK(e.select(0, 1).select(0, 2).to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}

TEST_CASE("tensor: reshape views when strides allow and copies otherwise") {
  const Tensor x = iota({4, 6});
  const Tensor v = x.reshape({2, 2, 3, 2});
  CHECK(v.storage() == x.storage());
  CHECK(x.reshape({-1}).shape() == Shape{24});
  const Tensor t = x.transpose(0, 1);  // not viewable as flat
  const Tensor r = t.reshape({24});
  CHECK(r.storage() != x.storage());
  CHECK(r.to_vector<float>()[1] == 6.0f);
  CHECK_THROWS_WITH_AS(t.view({24}), doctest::Contains("[view]"), Error);
  // Splitting a transposed dim is still a view.
  const Tensor u = t.reshape({3, 2, 4});
  CHECK(u.storage() == x.storage());
  CHECK(u.contiguous().to_vector<float>() == t.contiguous().to_vector<float>());
  CHECK_THROWS_WITH_AS(x.reshape({5, 5}), doctest::Contains("[reshape]"), Error);
}

TEST_CASE("tensor: diagonal, unsqueeze, squeeze, flatten, as_strided") {
  const Tensor x = iota({3, 4});
  CHECK(x.diagonal().to_vector<float>() == std::vector<float>{0, 5, 10});
  CHECK(x.diagonal(1).to_vector<float>() == std::vector<float>{1, 6, 11});
  CHECK(x.diagonal(-1).to_vector<float>() == std::vector<float>{4, 9});
  CHECK(x.unsqueeze(1).shape() == Shape{3, 1, 4});
  CHECK(x.unsqueeze(-1).shape() == Shape{3, 4, 1});
  CHECK(x.unsqueeze(0).squeeze(0).shape() == Shape{3, 4});
  CHECK(iota({2, 3, 4}).flatten(1).shape() == Shape{2, 12});
  // Overlapping windows of length 3, step 1, over the first row.
  const Tensor w = x.as_strided({2, 3}, {1, 1}, 0);
  CHECK(w.to_vector<float>() == std::vector<float>{0, 1, 2, 1, 2, 3});
  CHECK_THROWS_WITH_AS(x.as_strided({13}, {1}, 0), doctest::Contains("[as_strided]"), Error);
  CHECK_THROWS_WITH_AS(x.squeeze(0), doctest::Contains("[squeeze]"), Error);
  CHECK_THROWS_WITH_AS(x.transpose(0, 2), doctest::Contains("out of range"), Error);
}

TEST_CASE("tensor: copy_ converts dtypes and broadcasts; slice-assign writes through views") {
  Tensor x = zeros({3, 4}, DType::f64);
  copy_(x.slice(1, 1, 3), Tensor::from_vector<int32_t>({7, 8}, {2}));
  CHECK(x.to_vector<double>() == std::vector<double>{0, 7, 8, 0, 0, 7, 8, 0, 0, 7, 8, 0});
  CHECK_THROWS_WITH_AS(copy_(x, zeros({2, 4})), doctest::Contains("[copy_]"), Error);
  CHECK_THROWS_WITH_AS(copy_(zeros({4}).expand({3, 4}), x), doctest::Contains("expanded"), Error);
  CHECK(cast(x, DType::i64).to_vector<int64_t>()[1] == 7);
}

TEST_CASE("tensor: from_vector, item and errors name the op") {
  CHECK_THROWS_WITH_AS(Tensor::from_vector<float>({1, 2, 3}, {2, 2}),
                       doctest::Contains("[from_vector]"), Error);
  CHECK(Tensor::scalar(2.5, DType::f64).item() == 2.5);
  CHECK_THROWS_WITH_AS(zeros({2}).item(), doctest::Contains("[item]"), Error);
  CHECK_THROWS_WITH_AS(zeros({2}).data<double>(), doctest::Contains("data<f64>"), Error);
  CHECK_THROWS_WITH_AS(zeros({2}, DType::f32, Device::cuda(99)), doctest::Contains("CUDA"), Error);
}

TEST_CASE("tensor: a shape whose elements or bytes overflow int64 is refused, not wrapped") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // [2^63 - 1, 64] f32 wrapped to 2^66 - 256 bytes, which the allocator rounded up to 0: a model
  // with mlp_dim 2^63 - 1 trained a step on a buffer of nothing.
  CHECK_THROWS_WITH_AS((void)Tensor::empty({kMax, 64}),
                       "[tensor] f32[9223372036854775807, 64] would take more bytes than int64 "
                       "counts",
                       OutOfMemory);
  // Elements that fit, bytes that do not.
  CHECK_THROWS_AS((void)Tensor::empty({kMax / 4 + 1, 4}, DType::f64), OutOfMemory);
  // A size of 0 makes any other size harmless.
  CHECK(Tensor::empty({kMax, 0, kMax}).numel() == 0);
  CHECK(shape_numel({kMax, 0, 2}) == 0);
  CHECK_THROWS_WITH_AS((void)shape_numel({kMax, 2}),
                       "[shape] [9223372036854775807, 2] has more elements than int64 counts",
                       Error);
  CHECK(shape_numel({kMax}) == kMax);
}

TEST_CASE("tensor: strided_copy holds the same values with non-unit strides") {
  const Tensor x = test::random_tensor({3, 5, 7}, DType::f32, 1);
  const Tensor s = test::strided_copy(x);
  CHECK_FALSE(s.is_contiguous());
  CHECK(s.to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("test messages print a const char* as its text (tests/harness.h)") {
  // INFO("dtype " << dtype_name(dt)) must name the dtype when a check fails, not an address.
  const char* name = dtype_name(DType::f32);
  CHECK(std::string(doctest::toString(name).c_str()) == "f32");
  char text[] = "text";
  CHECK(std::string(doctest::toString(static_cast<char*>(text)).c_str()) == "text");
  CHECK(std::string(doctest::toString(static_cast<const char*>(nullptr)).c_str()) == "nullptr");
}

TEST_CASE("cpu allocator: buffers from 32 MiB are cached by size and reused; counts stay exact") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  const int64_t before = memory_stats(cpu).current_bytes;
  const Shape big{9 << 20};  // 36 MiB of f32
  const void* first = nullptr;
  {
    const Tensor t = zeros(big);
    first = t.raw_data();
    CHECK(memory_stats(cpu).current_bytes == before + (36 << 20));
  }
  CHECK(memory_stats(cpu).current_bytes == before);  // freed, though kept
  CHECK(cached_bytes(cpu) >= (36 << 20));
  {
    const Tensor again = zeros(big);  // the same size: the cached buffer, zero-filled again
    CHECK(again.raw_data() == first);
    CHECK(cached_bytes(cpu) == 0);
    CHECK(sum(again).item() == 0);
  }
  const Tensor other = zeros({10 << 20});  // another size does not take it
  CHECK(other.raw_data() != first);
  CHECK(cached_bytes(cpu) >= (36 << 20));
  empty_cache(cpu);
  CHECK(cached_bytes(cpu) == 0);
  const Tensor small = zeros({1000});  // small buffers are never cached
  (void)small;
  CHECK(cached_bytes(cpu) == 0);
}

namespace {
// A system with `budget` bytes left when the reader was set, whose process takes `overhead` bytes
// of memory per byte its tensors take (as they do once written): what it has left, counted each
// time it is read.
int64_t simulated_budget = 0, simulated_base = 0, simulated_overhead = 1;
int simulated_reads = 0;
int64_t simulated_left_now() {
  return simulated_budget -
         simulated_overhead * (memory_stats(Device::cpu()).current_bytes - simulated_base);
}
std::optional<int64_t> simulated_memory_left() {
  ++simulated_reads;
  return simulated_left_now();
}
void simulate(int64_t budget, int64_t overhead) {
  simulated_budget = budget;
  simulated_base = memory_stats(Device::cpu()).current_bytes;
  simulated_overhead = overhead;
  simulated_reads = 0;
  cpu::set_available_memory_reader(&simulated_memory_left);
}
std::optional<int64_t> unknown_memory_left() {
  return std::nullopt;
}
}  // namespace

// Linux grants a buffer larger than the memory left and kills the process once it is written;
// the allocator refuses it by name instead, keeping 16 MiB for the rest of the process
// (core/cpu/available_memory.h).
TEST_CASE("cpu allocator: a buffer the memory left cannot hold is refused by name") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  const Shape forty_mib{10 << 20};  // f32
  const int64_t live = memory_stats(cpu).current_bytes;
  const cpu::AvailableMemoryReader real = cpu::set_available_memory_reader(&simulated_memory_left);
  simulate((16 << 20) + (100 << 20), 1);
  {
    const Tensor a = Tensor::empty(forty_mib), b = Tensor::empty(forty_mib);
    const std::string error = test::error_of([&] { (void)Tensor::empty(forty_mib); });
    CHECK(error == fmt::format("[cpu allocator] out of memory allocating 41943040 bytes: the "
                               "system has {} bytes left ({} held by tensors, 16777216 kept for "
                               "the rest of the process)",
                               (36 << 20), live + (80 << 20)));
    CHECK_THROWS_AS((void)Tensor::empty(forty_mib), OutOfMemory);  // callers catch it by type
    CHECK(memory_stats(cpu).current_bytes == live + (80 << 20));   // nothing counted for it
  }
  // Freed, the same buffers fit again; and the memory is read again only when the live tensors
  // grow past what the last reading left room for, not once per allocation.
  simulate(int64_t{1} << 30, 1);
  const Tensor again = Tensor::empty(forty_mib), small = Tensor::empty({256});
  simulated_reads = 0;
  for (int i = 0; i < 1000; ++i) (void)Tensor::empty({256});
  CHECK(simulated_reads == 0);
  // A process that takes 3 bytes per tensor byte (model objects beside small tensors) is refused
  // before it has used what is left, and close to it, in a few readings.
  simulate((16 << 20) + (600 << 20), 3);
  std::vector<Tensor> held;
  std::string refused;
  while (refused.empty() && held.size() < 1000) {
    refused = test::error_of([&] { held.push_back(Tensor::empty({1 << 18})); });  // 1 MiB
    REQUIRE(simulated_left_now() >= 0);  // else the kernel would have killed the process
  }
  CHECK(refused.find("[cpu allocator] out of memory allocating 1048576 bytes") == 0);
  CHECK(held.size() >= 190);  // of the 200 MiB that fit
  CHECK(simulated_reads < 100);
  held.clear();
  // Where the memory left cannot be read, nothing is refused.
  cpu::set_available_memory_reader(&unknown_memory_left);
  empty_cache(cpu);  // a cached buffer would be handed out without a check
  CHECK_NOTHROW((void)Tensor::empty(forty_mib));
  cpu::set_available_memory_reader(real);
  empty_cache(cpu);
  const std::optional<int64_t> left = available_cpu_memory();
  REQUIRE(left.has_value());  // Linux: /proc/meminfo
  CHECK(*left > 0);
}
