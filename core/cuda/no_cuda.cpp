// The CUDA backend of a build without CUDA: every kernel of core/backend_kernels.inc is one line
// that throws. A build with RELPOS_CUDA compiles core/cuda/*.cu instead, where a missing kernel
// is a link error, never a silent gap.
#include "core/backend.h"

namespace relpos {

namespace {
[[noreturn]] void no_cuda(const char* kernel) {
  fail(kernel, "relpos was built without CUDA (configure with -DRELPOS_CUDA=ON)");
}
}  // namespace

bool cuda_available() {
  return false;
}

int cuda_device_count() {
  return 0;
}

namespace cuda {

MemoryCounter& memory_counter(Device) {
  no_cuda("memory_stats");
}
void* allocate(size_t, Device) {
  no_cuda("cuda allocator");
}
void deallocate(void*, size_t, Device) {
  no_cuda("cuda allocator");
}
int device_count() {
  return 0;
}
void synchronize(Device) {
  no_cuda("synchronize");
}
size_t cached_bytes(Device) {
  no_cuda("cached_bytes");
}
void empty_cache(Device) {
  no_cuda("empty_cache");
}
void copy_to_host(const Tensor&, const Tensor&) {
  no_cuda("to");
}
void copy_from_host(const Tensor&, const Tensor&) {
  no_cuda("to");
}

void copy(const Tensor&, const Tensor&) {
  no_cuda("copy_");
}
void fill(const Tensor&, double) {
  no_cuda("fill_");
}
void arange(const Tensor&, double, double) {
  no_cuda("arange");
}
void random_uniform(const Tensor&, uint64_t, uint64_t, double, double) {
  no_cuda("rand");
}
void random_normal(const Tensor&, uint64_t, uint64_t, double, double) {
  no_cuda("randn");
}
void dropout_mask(const Tensor&, double, uint64_t, uint64_t) {
  no_cuda("dropout");
}
void dropout_apply(const Tensor&, const Tensor&, double, const Tensor&) {
  no_cuda("dropout");
}
void unary(UnaryOp, double, const Tensor&, const Tensor&) {
  no_cuda("unary");
}
void binary(BinaryOp, double, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("binary");
}
void compare(CompareOp, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("compare");
}
void where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("where");
}
void reduce(ReduceOp, const Tensor&, const std::vector<int>&, const Tensor&) {
  no_cuda("reduce");
}
void argmax(const Tensor&, int, const Tensor&) {
  no_cuda("argmax");
}
bool all_finite(const Tensor&) {
  no_cuda("all_finite");
}
void sum_of_squares(const std::vector<Tensor>&, const Tensor&) {
  no_cuda("sum_of_squares");
}
void adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                 const AdamCoefficients&, const AdamUpdate&) {
  no_cuda("adam_update");
}
void softmax(const Tensor&, int, bool, const Tensor&) {
  no_cuda("softmax");
}
void softmax_backward(const Tensor&, const Tensor&, int, bool, const Tensor&) {
  no_cuda("softmax_backward");
}
bool attention_takes_bf16(int64_t, int64_t, const AttentionSpec&) {
  no_cuda("attention");
}
void attention(const Tensor&, const Tensor&, const Tensor&, const AttentionSpec&, const Tensor&,
               const Tensor&) {
  no_cuda("attention");
}
void attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, const AttentionSpec&, const AttentionGrads&) {
  no_cuda("attention_backward");
}
void layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&,
                const Tensor&) {
  no_cuda("layer_norm");
}
void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("layer_norm_backward");
}
void matmul(const Tensor&, const Tensor&, bool, bool, const Tensor&) {
  no_cuda("matmul");
}
void rfft(const Tensor&, int64_t, const Tensor&) {
  no_cuda("rfft");
}
void irfft(const Tensor&, int64_t, const Tensor&) {
  no_cuda("irfft");
}
void complex_mul(const Tensor&, const Tensor&, bool, const Tensor&) {
  no_cuda("complex_mul");
}
void cumsum(const Tensor&, int, bool, const Tensor&) {
  no_cuda("cumsum");
}
void index_select(const Tensor&, int, const Tensor&, const Tensor&) {
  no_cuda("index_select");
}
void gather(const Tensor&, int, const Tensor&, const Tensor&) {
  no_cuda("gather");
}
void scatter_add(int, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("scatter_add");
}
void index_add(int, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda("index_add");
}
void cross_entropy(const Tensor&, const Tensor&, int64_t, const Tensor&) {
  no_cuda("cross_entropy");
}
void cross_entropy_backward(const Tensor&, const Tensor&, int64_t, const Tensor&, const Tensor&) {
  no_cuda("cross_entropy_backward");
}

}  // namespace cuda
}  // namespace relpos
