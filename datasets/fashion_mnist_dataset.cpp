// The `fashion-mnist` dataset: Zalando's clothing images in MNIST's format (28x28, 10 classes),
// made here from Debian's dataset-fashion-mnist (datasets/prepare_mnist.cpp); reading and pooling
// are shared with mnist (datasets/mnist_family.h).
#include "datasets/mnist_family.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "fashion-mnist",
    {.kind = TaskKind::classification,
     .description = "clothing images in MNIST's format, 28x28 pixels as tokens, 10 classes",
     .how_to_get =
         "fashion-mnist comes from Debian: apt-get install dataset-fashion-mnist, then\n"
         "  relpos data prepare fashion-mnist --out DIR writes the four IDX files\n"
         "  (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-*; 60,000 train, 10,000 "
         "test).",
     .make = make_source<MnistFamilySource>,
     .prepare = prepare_fashion_mnist});

}  // namespace relpos
