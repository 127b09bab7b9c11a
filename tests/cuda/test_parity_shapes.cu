// Shapes against the CPU backend: every activation, odd widths and odd batch sizes, a stack of
// ReLU layers with SGD and momentum, a Linear last layer with plain SGD, Recompute layers,
// wide outputs (the loss kernel's shared memory), and all of it again through the epilogue
// fallback (plain products and memopt's own kernels).
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
// The loss kernel's two shared-memory layouts: per-warp bias rows up to
// kernels::deterministic_classes padded classes (1528), one shared row above (1531 -> 1536,
// past 48 KiB before the limit counted the static part), and the widest it takes.
using Wide1528 = mo::Sequential<mo::Dense<1528, mo::Softmax>>;
using Wide1531 = mo::Sequential<mo::Dense<24, mo::ReLU>, mo::Dense<1531, mo::Softmax>>;
using Widest = mo::Sequential<mo::Dense<12248, mo::Softmax>>;
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
  // Exact biases: with float32 ones the 16-bit working copy's rounded biases alone move this
  // model's float16 gradients by about 1% (0.95% in a host simulation of this step).
  compare_with_cpu<Relus, mo::Input<5>, mo::mixed_float16>(sgd, 300, {300, 5}, 8,
                                                           {.exact_biases = true});
}
TEST_CASE("a Linear last layer (from logits) matches the CPU backend with plain SGD") {
  compare_with_cpu<Logits, mo::Input<19>, mo::float32>(mo::SGD{}, 96, {96, 95}, 9);
  compare_with_cpu<Logits, mo::Input<19>, mo::mixed_bfloat16>(mo::SGD{}, 96, {96}, 10);
}
TEST_CASE("Recompute layers match the CPU backend") {
  compare_with_cpu<Recomputed, mo::Input<20>, mo::float32>(mo::Adam{}, 50, {50, 49}, 11);
  compare_with_cpu<Recomputed, mo::Input<20>, mo::mixed_float16>(mo::Adam{}, 50, {50}, 12);
}

TEST_CASE("wide outputs: both shared-memory layouts of the loss kernel match the CPU backend") {
  static_assert(mo::cuda_backend::kernels::deterministic_classes == 1528);
  static_assert(mo::cuda_backend::kernels::max_loss_classes == 12248);
  compare_with_cpu<Wide1528, mo::Input<16>, mo::float32>(mo::Adam{}, 64, {64, 9}, 13);
  compare_with_cpu<Wide1531, mo::Input<16>, mo::float32>(mo::Adam{}, 64, {64, 9}, 14);
  compare_with_cpu<Wide1531, mo::Input<16>, mo::mixed_float16>(mo::Adam{}, 64, {64}, 15);
  compare_with_cpu<Widest, mo::Input<8>, mo::float32>(mo::SGD{}, 16, {16}, 16);
}

// The path a layer takes when cuBLASLt's heuristic has no algorithm for its epilogue, forced:
// every activation (ReLU's mask and GELU's input in the plan's layouts), Recompute, 16-bit.
TEST_CASE("the epilogue fallback matches the CPU backend") {
  const ParityOptions forced{.fallback = true, .exact_biases = true};
  compare_with_cpu<Mixed, mo::Input<11>, mo::float32>(mo::Adam{}, 40, {40, 1}, 17, forced);
  compare_with_cpu<Mixed, mo::Input<11>, mo::mixed_float16>(mo::Adam{}, 40, {40, 7}, 18, forced);
  compare_with_cpu<Relus, mo::Input<5>, mo::mixed_bfloat16>(mo::Adam{}, 300, {300}, 19, forced);
  compare_with_cpu<Recomputed, mo::Input<20>, mo::float32>(mo::Adam{}, 50, {50, 49}, 20, forced);
  compare_with_cpu<Logits, mo::Input<19>, mo::float32>(mo::SGD{}, 96, {96}, 21, forced);
}

// cuBLASLt's DRELU_BGRAD/DGELU_BGRAD with a float32 bias gradient from 16-bit outputs
// (cublasLt.h does not document it): each bias gradient on its own, under both 16-bit types,
// with biases the compute type holds exactly so that nothing else moves them.
TEST_CASE("float32 bias gradients from 16-bit outputs match the CPU backend, layer by layer") {
  using Deep = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<40, mo::GELU>,
                              mo::Dense<48, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
  const ParityOptions exact{.exact_biases = true};
  compare_with_cpu<Deep, mo::Input<32>, mo::mixed_float16>(mo::Adam{}, 128, {128, 31}, 22, exact);
  // One step: after an update the master biases are no longer exact in bfloat16.
  compare_with_cpu<Deep, mo::Input<32>, mo::mixed_bfloat16>(mo::Adam{}, 128, {128}, 23, exact);
}
