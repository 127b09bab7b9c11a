// Shapes against the CPU backend: every activation, odd widths and odd batch sizes, a stack of
// ReLU layers with SGD and momentum, a Linear last layer with plain SGD, Recompute layers.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

#include "cuda_test_support.hpp"
#include "parity.hpp"

namespace mo = memopt;
using namespace memopt_test;

namespace {
// Every activation, every width odd, a Linear hidden layer.
using Mixed =
    mo::Sequential<mo::Dense<13, mo::GELU>, mo::Dense<7, mo::Sigmoid>, mo::Dense<9, mo::Tanh>,
                   mo::Dense<5, mo::Linear>, mo::Dense<3, mo::Softmax>>;
using Relus = mo::Sequential<mo::Dense<3, mo::ReLU>, mo::Dense<17, mo::ReLU>,
                             mo::Dense<130, mo::ReLU>, mo::Dense<2, mo::Softmax>>;
using Logits = mo::Sequential<mo::Dense<33, mo::GELU>, mo::Dense<11, mo::Linear>>;
// Recomputed in backward: a product (ReLU, with its mask), GELU from its kept input, and a
// run of two recomputed products (ReLU then Tanh).
using Recomputed =
    mo::Sequential<mo::Dense<64, mo::Recompute<mo::ReLU>>, mo::Dense<33, mo::Recompute<mo::GELU>>,
                   mo::Dense<24, mo::Recompute<mo::ReLU>>, mo::Dense<17, mo::Recompute<mo::Tanh>>,
                   mo::Dense<10, mo::Softmax>>;
}  // namespace

TEST_CASE("every activation and odd widths match the CPU backend under float32") {
  compare_with_cpu<Mixed, mo::Input<11>, mo::float32>(mo::Adam{}, 40, {40, 40, 1}, 4);
}
TEST_CASE("every activation and odd widths match the CPU backend under mixed_float16") {
  compare_with_cpu<Mixed, mo::Input<11>, mo::mixed_float16>(mo::Adam{}, 40, {40, 7}, 5);
}
TEST_CASE("every activation and odd widths match the CPU backend under mixed_bfloat16") {
  compare_with_cpu<Mixed, mo::Input<11>, mo::mixed_bfloat16>(mo::Adam{}, 40, {40, 7}, 6);
}
TEST_CASE("a stack of ReLU layers matches the CPU backend with SGD and momentum") {
  const mo::SGD sgd{{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}};
  compare_with_cpu<Relus, mo::Input<5>, mo::float32>(sgd, 300, {300, 299, 300}, 7);
  compare_with_cpu<Relus, mo::Input<5>, mo::mixed_float16>(sgd, 300, {300, 5}, 8);
}
TEST_CASE("a Linear last layer (from logits) matches the CPU backend with plain SGD") {
  compare_with_cpu<Logits, mo::Input<19>, mo::float32>(mo::SGD{}, 96, {96, 95}, 9);
  compare_with_cpu<Logits, mo::Input<19>, mo::mixed_bfloat16>(mo::SGD{}, 96, {96}, 10);
}
TEST_CASE("Recompute layers match the CPU backend") {
  compare_with_cpu<Recomputed, mo::Input<20>, mo::float32>(mo::Adam{}, 50, {50, 49}, 11);
  compare_with_cpu<Recomputed, mo::Input<20>, mo::mixed_float16>(mo::Adam{}, 50, {50}, 12);
}
