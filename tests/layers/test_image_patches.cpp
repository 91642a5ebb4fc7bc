// image_patches against its definition by loops (odd sides, overlapping and disjoint patches,
// the zero border), square_side, the refusals, and CUDA against CPU.
#include <vector>

#include "core/ops.h"
#include "layers/image_patches.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

// out[b][i * m + j][a * k + c] = image[b][i * s - p + a][j * s - p + c], 0 outside the image.
std::vector<double> naive_patches(const std::vector<double>& image, int64_t batch,
                                  const PatchGeometry& g) {
  const int64_t n = g.side, k = g.size, s = g.stride, m = g.grid(), p = g.pad();
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t a = 0; a < k; ++a)
          for (int64_t c = 0; c < k; ++c) {
            const int64_t r = i * s - p + a, col = j * s - p + c;
            const bool inside = r >= 0 && r < n && col >= 0 && col < n;
            out.push_back(inside ? image[static_cast<size_t>(b * n * n + r * n + col)] : 0.0);
          }
  return out;
}

}  // namespace

TEST_CASE("image patches: equal their definition by loops; the grid is side / stride") {
  for (const PatchGeometry g :
       {PatchGeometry{28, 3, 2}, PatchGeometry{7, 3, 1}, PatchGeometry{6, 2, 2},
        PatchGeometry{9, 5, 3}, PatchGeometry{5, 1, 1}, PatchGeometry{8, 4, 2}}) {
    RELPOS_INFO("side {} size {} stride {}", g.side, g.size, g.stride);
    const int64_t batch = 3;
    const Tensor image = test::random_tensor({batch, g.side * g.side}, DType::f64, 61);
    const Tensor patches = image_patches(image, g);
    CHECK(patches.shape() == Shape{batch, g.grid() * g.grid(), g.size * g.size});
    CHECK(g.tokens() == g.grid() * g.grid());
    const Tensor want =
        Tensor::from_vector(naive_patches(image.to_vector<double>(), batch, g), patches.shape());
    CHECK_CLOSE(patches, want, 0, 0);
  }
  // 28 x 28 in 3 x 3 every 2: 14 x 14 patches centred on the even pixels, one row/column of zeros
  // above and left of the first.
  const PatchGeometry mnist{28, 3, 2};
  CHECK(mnist.grid() == 14);
  CHECK(mnist.pad() == 1);
  CHECK(PatchGeometry{28, 2, 2}.pad() == 0);
}

TEST_CASE("image patches: square_side and the refusals") {
  CHECK(square_side(784) == 28);
  CHECK(square_side(196) == 14);
  CHECK(square_side(1) == 1);
  CHECK(square_side(785) == 0);
  CHECK(square_side(0) == 0);
  const Tensor image = zeros({2, 36});
  CHECK(test::error_of([&] {
          image_patches(image, {6, 3, 4});
        }) == "[image_patches] a 6 x 6 image takes patches of size 3 >= stride 4, a divisor of 6");
  CHECK(test::error_of([&] {
          image_patches(image, {6, 1, 2});
        }) == "[image_patches] a 6 x 6 image takes patches of size 1 >= stride 2, a divisor of 6");
  CHECK(test::error_of([&] {
          image_patches(zeros({2, 35}), {6, 3, 2});
        }).find("[image_patches] expects values [B, 36] (6 x 6 pixels), got") == 0);
}

TEST_CASE("image patches: CUDA matches CPU") {
  test::check_cuda_matches_cpu(
      "image_patches",
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{image_patches(x[0], PatchGeometry{14, 3, 2})};
      },
      {test::random_tensor({4, 196}, DType::f32, 62)});
}
