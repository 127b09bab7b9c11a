// A program that defines and plans models and runs none: all it needs is <memopt/core.hpp>.
// self_contained.light_core compiles it with the compiler's include trace (-H) and fails if
// JSON, Eigen, oneDNN, {fmt} or the thread headers come in: a planning program must stay a
// fraction of a second to compile.
#include <memopt/core.hpp>

#include <cstdio>
#include <ratio>

namespace mo = memopt;

// Keras's "Simple MNIST convnet" and the README's Dense network.
using Convnet = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                               mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                               mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
using DenseNet = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

using Cnn = mo::ModelPlan<Convnet, mo::Input<28, 28, 1>, mo::mixed_bfloat16>;
using Mlp = mo::ModelPlan<DenseNet, mo::Input<784>, mo::float32>;

static_assert(Cnn::parameter_count == 34'826);
static_assert(Cnn::arena_bytes(32) == Cnn::lower_bound_bytes(32));
static_assert(Cnn::arena_bytes(32) < Cnn::naive_bytes(32));
static_assert(Mlp::parameter_count == 101'770);
static_assert(Mlp::arena_bytes(32) == Mlp::lower_bound_bytes(32));
static_assert(Mlp::inference_arena_bytes(256) <= Mlp::inference_naive_bytes(256));

int main() {
  std::printf("convnet arena at batch 128: %zu bytes\n", Cnn::arena_bytes(128));
  return 0;
}
