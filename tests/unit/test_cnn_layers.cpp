// Convolutional layers as types: Keras's shapes and parameter counts at compile time, plans at
// the lower bound, and each layer's gradients through the CPU backend against central finite
// differences of the loss. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <ratio>
#include <string>
#include <type_traits>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

// Keras's "Simple MNIST convnet", in memopt's spelling.
using KerasConvnet = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                                    mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                                    mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
using ConvnetSpec = mo::ModelSpec<KerasConvnet, mo::Input<28, 28, 1>, mo::float32>;

static_assert(ConvnetSpec::parameter_count == 34'826);
static_assert(ConvnetSpec::shapes[1] == mo::image_shape(26, 26, 32));
static_assert(ConvnetSpec::shapes[2] == mo::image_shape(13, 13, 32));
static_assert(ConvnetSpec::shapes[3] == mo::image_shape(11, 11, 64));
static_assert(ConvnetSpec::shapes[4] == mo::image_shape(5, 5, 64));
static_assert(ConvnetSpec::shapes[5] == mo::vector_shape(1600));
static_assert(ConvnetSpec::shapes[6] == mo::vector_shape(1600));
static_assert(ConvnetSpec::shapes[7] == mo::vector_shape(10));
// Flatten is a view: six nodes compute.
static_assert(ConvnetSpec::layer_count == 7 && ConvnetSpec::depth == 6);
static_assert(ConvnetSpec::layer_parameter_count(0) == 3 * 3 * 1 * 32 + 32);
static_assert(ConvnetSpec::layer_parameter_count(2) == 3 * 3 * 32 * 64 + 64);
static_assert(ConvnetSpec::layer_parameter_count(6) == 1600 * 10 + 10);

// Keras's `same` padding and strides on odd sizes.
static_assert(mo::Conv2D<4, 3, mo::Strides<2>, mo::Same>::output_shape(mo::image_shape(7, 5, 3)) ==
              mo::image_shape(4, 3, 4));
static_assert(mo::Conv2D<4, mo::KernelSize<3, 2>, mo::Strides<2, 1>>::output_shape(
                  mo::image_shape(7, 5, 3)) == mo::image_shape(3, 4, 4));
static_assert(mo::MaxPooling2D<2, mo::Same>::output_shape(mo::image_shape(7, 5, 3)) ==
              mo::image_shape(4, 3, 3));
static_assert(mo::AveragePooling2D<3, mo::Strides<2>>::output_shape(mo::image_shape(7, 5, 3)) ==
              mo::image_shape(3, 2, 3));
static_assert(mo::GlobalAveragePooling2D::output_shape(mo::image_shape(7, 5, 3)) ==
              mo::vector_shape(3));

// The options after the kernel (pool) size are Keras's keyword arguments, told apart by kind
// and taken in any order: `Conv2D<16, 3, ReLU>` as Keras users write `activation=` first.
template <class A, class B>
constexpr bool same_window_layer =
    std::is_same_v<typename A::activation, typename B::activation>&& A::padding ==
    B::padding&& A::strides == B::strides&& A::kernel == B::kernel&& A::filters == B::filters;
static_assert(same_window_layer<mo::Conv2D<16, 3, mo::ReLU, mo::Same>,
                                mo::Conv2D<16, 3, mo::Same, mo::ReLU>>);
static_assert(same_window_layer<mo::Conv2D<16, 3, mo::ReLU, mo::Same, mo::Strides<2>>,
                                mo::Conv2D<16, 3, mo::Strides<2>, mo::Same, mo::ReLU>>);
static_assert(std::is_same_v<mo::Conv2D<16, 3, mo::ReLU>::activation, mo::ReLU> &&
              mo::Conv2D<16, 3, mo::ReLU>::padding == mo::Padding::valid &&
              mo::Conv2D<16, 3, mo::ReLU>::strides == mo::Extent2{1, 1});
static_assert(std::is_same_v<mo::Conv2D<16, 3>::activation, mo::Linear>);
static_assert(mo::MaxPooling2D<3, mo::Same, mo::Strides<2>>::strides == mo::Extent2{2, 2} &&
              mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>::padding == mo::Padding::same);
static_assert(mo::MaxPooling2D<3>::strides == mo::Extent2{3, 3});
// Either order gives the same model: the same shapes and the same parameter count.
using ReluFirst = mo::ModelSpec<
    mo::Sequential<mo::Conv2D<16, 3, mo::ReLU, mo::Same>, mo::Flatten, mo::Dense<10, mo::Softmax>>,
    mo::Input<8, 8, 1>, mo::float32>;
using SameFirst = mo::ModelSpec<
    mo::Sequential<mo::Conv2D<16, 3, mo::Same, mo::ReLU>, mo::Flatten, mo::Dense<10, mo::Softmax>>,
    mo::Input<8, 8, 1>, mo::float32>;
static_assert(ReluFirst::shapes == SameFirst::shapes &&
              ReluFirst::parameter_count == SameFirst::parameter_count);

// BatchNormalization's weights: two trainable, two not.
using BnSpec = mo::ModelSpec<mo::Sequential<mo::Conv2D<8, 3>, mo::BatchNormalization, mo::Flatten,
                                            mo::Dense<3, mo::Softmax>>,
                             mo::Input<6, 6, 2>, mo::float32>;
static_assert(BnSpec::parameter_count == (3 * 3 * 2 * 8 + 8) + 2 * 8 + (4 * 4 * 8 * 3 + 3));
static_assert(BnSpec::state_count == 2 * 8);

template <class Spec>
constexpr bool plan_at_lower_bound(std::size_t batch) {
  const auto p = mo::plan::training_plan<Spec>(batch);
  return p.is_valid() && p.arena_bytes == p.lower_bound_bytes();
}

// A table of CNNs whose plans must sit at the liveness lower bound.
using Vgg =
    mo::Sequential<mo::Conv2D<16, 3, mo::Same, mo::ReLU>, mo::Conv2D<16, 3, mo::Same, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<32, 3, mo::Same, mo::ReLU>,
                   mo::Conv2D<32, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Conv2D<64, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                   mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<64, mo::ReLU>,
                   mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
using Big = mo::Sequential<
    mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 7, mo::Strides<2>, mo::Same, mo::ReLU>,
    mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>, mo::Conv2D<64, 3, mo::Same, mo::ReLU>,
    mo::BatchNormalization, mo::GlobalAveragePooling2D, mo::Dense<10, mo::Softmax>>;
static_assert(plan_at_lower_bound<ConvnetSpec>(32));
static_assert(plan_at_lower_bound<ConvnetSpec>(128));
static_assert(plan_at_lower_bound<BnSpec>(16));
static_assert(plan_at_lower_bound<mo::ModelSpec<Vgg, mo::Input<32, 32, 3>, mo::float32>>(8));
static_assert(plan_at_lower_bound<mo::ModelSpec<Vgg, mo::Input<32, 32, 3>, mo::mixed_bfloat16>>(8));
static_assert(plan_at_lower_bound<mo::ModelSpec<Big, mo::Input<224, 224, 3>, mo::float32>>(4));

// A ReLU's mask serves the input gradient of the layer above; max pooling over tiling windows
// applies ReLU's derivative from its own argmax, so a ReLU below it keeps none (the convnet's
// conv2d and conv2d_1); a ReLU below overlapping windows or another convolution keeps one.
constexpr auto kConvnetPlan = mo::plan::training_plan<ConvnetSpec>(32);
static_assert(!kConvnetPlan.contains(mo::plan::BufferRole::relu_mask, 0));
static_assert(!kConvnetPlan.contains(mo::plan::BufferRole::relu_mask, 2));
static_assert(mo::MaxPooling2D<2>::backward_reads.input_grad_carries_relu_below);
static_assert(!mo::MaxPooling2D<2, mo::Strides<1>>::backward_reads.input_grad_carries_relu_below);
static_assert(!mo::MaxPooling2D<2, mo::Same>::backward_reads.input_grad_carries_relu_below);
using Overlapping = mo::Sequential<mo::Conv2D<4, 3, mo::ReLU>, mo::MaxPooling2D<2, mo::Strides<1>>,
                                   mo::Conv2D<4, 3, mo::ReLU>, mo::Conv2D<4, 3, mo::ReLU>,
                                   mo::Flatten, mo::Dense<3, mo::Softmax>>;
constexpr auto kOverlappingPlan =
    mo::plan::training_plan<mo::ModelSpec<Overlapping, mo::Input<9, 9, 2>, mo::float32>>(4);
static_assert(kOverlappingPlan.contains(mo::plan::BufferRole::relu_mask, 0));  // below 2x2/1
static_assert(kOverlappingPlan.contains(mo::plan::BufferRole::relu_mask, 2));  // below a conv
static_assert(plan_at_lower_bound<mo::ModelSpec<Overlapping, mo::Input<9, 9, 2>, mo::float32>>(4));

struct Problem {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::size_t rows;
};

template <class Spec>
Problem random_problem(std::size_t rows, std::uint64_t seed) {
  mo::Rng rng(seed);
  Problem p{std::vector<float>(rows * Spec::inputs), std::vector<std::int32_t>(rows), rows};
  for (float& v : p.x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : p.y) v = static_cast<std::int32_t>(rng.below(Spec::outputs));
  return p;
}

// The mean training loss at weights `w` (update 0, so Dropout always draws the same mask), and
// its gradient: one step with learning rate 0 leaves the weights where they are.
template <class Spec>
struct TrainingLoss {
  mo::cpu_backend::Executor<Spec> e;
  const Problem& p;
  std::vector<float> state;

  TrainingLoss(const Problem& problem, std::span<const float> initial_state) : p(problem) {
    e.set_seed(5);
    e.prepare(p.rows, 0);
    state.assign(initial_state.begin(), initial_state.end());
  }
  double operator()(std::span<const float> w, std::vector<float>* gradients = nullptr) {
    e.set_parameters(w);
    if constexpr (Spec::state_count > 0) e.set_state_weights(state);
    std::int64_t iterations = 0;
    mo::NoLossScale scale;
    (void)e.take_totals();
    mo::train::training_step(e, p.x.data(), p.y.data(), p.rows, mo::SGD{{.learning_rate = 0.0}},
                             iterations, scale);
    if (gradients) {
      gradients->resize(Spec::parameter_count);
      e.get_gradients(*gradients);
    }
    return e.take_totals().loss_sum / static_cast<double>(p.rows);
  }
};

template <class Net, class In>
void check_gradients(double tolerance) {
  using M = mo::Model<Net, In, mo::float32>;
  using Spec = typename M::spec;
  M model{3};
  std::vector<float> w = model.get_parameters();
  // Non-trivial biases and normalization parameters: Keras starts them at 0 and 1.
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  const Problem p = random_problem<Spec>(5, 23);
  TrainingLoss<Spec> loss(p, model.get_state_weights());

  std::vector<float> analytic;
  const double at_w = loss(w, &analytic);
  CHECK(std::isfinite(at_w));
  const auto central = [&](std::size_t j, float h) {
    const float keep = w[j];
    w[j] = keep + h;
    const double up = loss(w);
    w[j] = keep - h;
    const double down = loss(w);
    w[j] = keep;
    return (up - down) / (2.0 * static_cast<double>(h));
  };
  // A difference whose step crosses a ReLU kink or a max-pooling switch is not a derivative;
  // two step sizes that disagree reveal it, and such coordinates are left out (few are).
  std::vector<double> got, want;
  for (std::size_t j = 0; j < w.size(); ++j) {
    const double coarse = central(j, 1e-2f), fine = central(j, 5e-3f);
    if (std::abs(coarse - fine) > 1e-3 + 0.05 * std::abs(fine)) continue;
    got.push_back(analytic[j]);
    want.push_back(fine);
  }
  const double kept = static_cast<double>(got.size()) / static_cast<double>(w.size());
  const double error = relative_error(got, want);
  MESSAGE(Spec::parameter_count << " parameters (" << kept * 100
                                << "% smooth): gradient relative error " << error);
  CHECK(kept > 0.8);
  CHECK(error < tolerance);
}

}  // namespace

TEST_CASE("Keras's MNIST convnet: 34,826 parameters and Keras's output shapes") {
  // The static_asserts above are the proof; summary() shows the same table.
  using M = mo::Model<KerasConvnet, mo::Input<28, 28, 1>, mo::float32>;
  const std::string s = M{1}.summary_string();
  CHECK(s.find("conv2d (Conv2D)") != std::string::npos);
  CHECK(s.find("(None, 26, 26, 32)") != std::string::npos);
  CHECK(s.find("(None, 5, 5, 64)") != std::string::npos);
  CHECK(s.find("flatten (Flatten)") != std::string::npos);
  CHECK(s.find("(None, 1600)") != std::string::npos);
  CHECK(s.find("34,826") != std::string::npos);
}

TEST_CASE("Conv2D with same padding and strides on odd sizes, then average pooling: gradients") {
  check_gradients<mo::Sequential<mo::Conv2D<4, 3, mo::Strides<2, 1>, mo::Same, mo::ReLU>,
                                 mo::AveragePooling2D<2, mo::Strides<1>>, mo::Flatten,
                                 mo::Dense<5, mo::Softmax>>,
                  mo::Input<7, 5, 3>>(1e-2);
}

TEST_CASE("Conv2D, BatchNormalization, max pooling with same padding, global pooling: gradients") {
  check_gradients<mo::Sequential<mo::Conv2D<3, mo::KernelSize<3, 2>, mo::Tanh>,
                                 mo::BatchNormalization, mo::MaxPooling2D<2, mo::Same>,
                                 mo::GlobalAveragePooling2D, mo::Dense<4, mo::Softmax>>,
                  mo::Input<7, 5, 2>>(1e-2);
}

TEST_CASE("the convnet's pattern in miniature: ReLU convolutions into max pooling: gradients") {
  check_gradients<
      mo::Sequential<mo::Conv2D<4, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                     mo::Conv2D<5, 2, mo::Same, mo::ReLU>, mo::MaxPooling2D<2, mo::Strides<1>>,
                     mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<3, mo::Softmax>>,
      mo::Input<9, 8, 2>>(1e-2);
}

TEST_CASE("Rescaling, Dropout and a Dense BatchNormalization: gradients") {
  check_gradients<
      mo::Sequential<mo::Rescaling<std::ratio<1, 2>, std::ratio<1, 4>>,
                     mo::Conv2D<3, 3, mo::Same, mo::ReLU>, mo::Dropout<std::ratio<1, 4>>,
                     mo::Flatten, mo::Dense<6, mo::Sigmoid>, mo::BatchNormalization,
                     mo::Dropout<std::ratio<1, 2>>, mo::Dense<3, mo::Softmax>>,
      mo::Input<5, 4, 2>>(1e-2);
}

namespace {

using BnDense = mo::Sequential<mo::BatchNormalization, mo::Dense<2, mo::Softmax>>;
using BnModel = mo::Model<BnDense, mo::Input<3>, mo::float32>;

}  // namespace

TEST_CASE("BatchNormalization: batch statistics in fit, moving statistics updated as Keras does") {
  using Spec = BnModel::spec;
  static_assert(Spec::state_count == 6);
  const std::vector<float> x = {0.5f,   -1.0f, 2.0f, 1.5f, 0.25f, -0.5f,
                                -0.75f, 2.0f,  1.0f, 2.5f, -1.5f, 0.0f};
  const std::vector<std::int32_t> y = {0, 1, 1, 0};
  BnModel model{4};
  std::vector<float> w = model.get_parameters();  // gamma[3], beta[3], kernel[3x2], bias[2]
  const std::vector<float> gamma = {1.5f, 0.5f, -2.0f}, beta = {0.25f, -0.5f, 1.0f};
  std::copy(gamma.begin(), gamma.end(), w.begin());
  std::copy(beta.begin(), beta.end(), w.begin() + 3);
  const std::vector<float> moving = {0.1f, -0.2f, 0.3f, 2.0f, 0.5f, 1.5f};  // mean[3], var[3]

  mo::cpu_backend::Executor<Spec> e;
  e.set_parameters(w);
  e.set_state_weights(moving);
  e.prepare(4, 0);
  std::int64_t iterations = 0;
  mo::NoLossScale scale;
  mo::train::training_step(e, x.data(), y.data(), 4, mo::SGD{{.learning_rate = 0.0}}, iterations,
                           scale);
  std::vector<float> state(6);
  e.get_state_weights(state);
  for (std::size_t c = 0; c < 3; ++c) {
    double mean = 0, var = 0;
    for (std::size_t r = 0; r < 4; ++r) mean += x[r * 3 + c] / 4.0;
    for (std::size_t r = 0; r < 4; ++r) var += (x[r * 3 + c] - mean) * (x[r * 3 + c] - mean) / 4.0;
    INFO("channel ", c);
    CHECK(state[c] == doctest::Approx(0.99 * moving[c] + 0.01 * mean).epsilon(1e-6));
    CHECK(state[3 + c] == doctest::Approx(0.99 * moving[3 + c] + 0.01 * var).epsilon(1e-6));
  }

  // Inference normalizes with the moving statistics: the probabilities by hand, in double.
  std::vector<float> got(4 * 2);
  e.predict(x.data(), 4, got.data());
  std::vector<double> want(4 * 2);
  for (std::size_t r = 0; r < 4; ++r) {
    double z[2] = {w[12], w[13]};  // biases after gamma, beta and the 3x2 kernel
    for (std::size_t c = 0; c < 3; ++c) {
      const double n =
          gamma[c] * (x[r * 3 + c] - state[c]) / std::sqrt(state[3 + c] + 1e-3) + beta[c];
      for (std::size_t u = 0; u < 2; ++u) z[u] += n * w[6 + c * 2 + u];
    }
    const double m = std::max(z[0], z[1]);
    const double s = std::exp(z[0] - m) + std::exp(z[1] - m);
    for (std::size_t u = 0; u < 2; ++u) want[r * 2 + u] = std::exp(z[u] - m) / s;
  }
  CHECK(relative_error(got, want) < 1e-6);
}

TEST_CASE("Dropout: the rate of dropped values, Keras's scaling, a mask reproduced by its seed") {
  using Spec =
      mo::ModelSpec<mo::Sequential<mo::Dropout<std::ratio<1, 4>>, mo::Dense<2, mo::Softmax>>,
                    mo::Input<4000>, mo::float32>;
  mo::cpu_backend::LayerKernel<mo::Dropout<std::ratio<1, 4>>, Spec, 0> kernel;
  constexpr std::size_t rows = 2, n = rows * 4000;
  mo::Rng rng(9);
  std::vector<float> x(n), y(n), again(n), dy(n), dx(n);
  for (float& v : x) v = rng.uniform(0.5f, 2.0f);
  for (float& v : dy) v = rng.uniform(-1.0f, 1.0f);
  std::vector<std::byte> mask(rows *
                              mo::Dropout<std::ratio<1, 4>>::saved(Spec::shapes[0])[0].per_sample);
  kernel.prepare(rows);
  std::vector<float> scratch(kernel.scratch_bytes(rows) / sizeof(float) + 1);

  mo::cpu_backend::ForwardIo<float, float> io;
  io.rows = rows;
  io.x = x.data();
  io.y = y.data();
  io.saved[0] = mask.data();
  io.training = true;
  io.seed = 1234;
  io.scratch = scratch.data();
  kernel.forward(io);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (y[i] == 0.0f)
      ++dropped;
    else
      REQUIRE(y[i] == doctest::Approx(x[i] / 0.75f).epsilon(1e-6));
  }
  const double rate = static_cast<double>(dropped) / n;
  MESSAGE("dropped " << rate << " of " << n << " values at rate 0.25");
  CHECK(rate == doctest::Approx(0.25).epsilon(0.08));  // 4 standard deviations: 0.02

  mo::cpu_backend::BackwardIo<float> back;
  back.rows = rows;
  back.dy = dy.data();
  back.dx = dx.data();
  back.saved[0] = mask.data();
  back.scratch = scratch.data();
  kernel.input_grad(back);
  for (std::size_t i = 0; i < n; ++i)
    REQUIRE(dx[i] == (y[i] == 0.0f ? 0.0f : doctest::Approx(dy[i] / 0.75f).epsilon(1e-6)));

  io.y = again.data();
  kernel.forward(io);
  CHECK(again == y);  // the same seed: the same mask
  io.seed = 1235;
  kernel.forward(io);
  CHECK(again != y);
  io.training = false;  // evaluate, predict
  kernel.forward(io);
  CHECK(again == x);
}

TEST_CASE("checkpoints carry BatchNormalization's moving statistics under Keras's names") {
  using Net = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::GlobalAveragePooling2D, mo::Dense<3, mo::Softmax>>;
  using M = mo::Model<Net, mo::Input<6, 5, 2>, mo::float32>;
  const Problem p = random_problem<M::spec>(8, 31);
  M trained{5};
  trained.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  trained.fit(mo::data::from(p.x, p.y, M::spec::inputs) | mo::data::batch(4),
              {.epochs = 1, .verbose = 0});
  const std::vector<float> state = trained.get_state_weights();
  REQUIRE(state.size() == 8);
  CHECK(state != std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1});  // fit moved them

  mo::testing::TempDir dir;
  trained.save_weights(dir / "w.safetensors");
  const auto file = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  for (const char* name : {"conv2d/kernel", "conv2d/bias", "batch_normalization/gamma",
                           "batch_normalization/beta", "batch_normalization/moving_mean",
                           "batch_normalization/moving_variance", "dense/kernel", "dense/bias"}) {
    INFO(name);
    CHECK(file.find(name) != nullptr);
  }
  CHECK(file.find("conv2d/kernel")->shape == std::vector<std::uint64_t>{3, 3, 2, 4});

  M restored{6};
  restored.load_weights(dir / "w.safetensors");
  CHECK(restored.get_weights() == trained.get_weights());
  CHECK(restored.get_state_weights() == state);
  CHECK(restored.predict(p.x) == trained.predict(p.x));

  trained.save(dir / "full.safetensors");
  M resumed{7};
  resumed.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  resumed.load(dir / "full.safetensors");
  CHECK(resumed.get_state_weights() == state);
}

// The loss, outputs and gradients of Net under mixed_float16 and mixed_bfloat16, each within
// 1e-2 of float32's.
template <class Net, class In>
void check_16bit_against_float32(std::uint64_t seed, std::size_t rows = 6) {
  using F32 = mo::ModelSpec<Net, In, mo::float32>;
  const Problem p = random_problem<F32>(rows, seed);
  mo::Model<Net, In, mo::float32> reference{8};
  const std::vector<float> w = reference.get_parameters();
  TrainingLoss<F32> f32(p, reference.get_state_weights());
  std::vector<float> g32;
  const double loss32 = f32(w, &g32);
  std::vector<float> p32(p.rows * 4);
  f32.e.predict(p.x.data(), p.rows, p32.data());

  const auto check = [&]<class Policy>(Policy) {
    using S = mo::ModelSpec<Net, In, Policy>;
    TrainingLoss<S> narrow(p, reference.get_state_weights());
    std::vector<float> g;
    const double loss = narrow(w, &g);
    std::vector<float> probabilities(p.rows * 4);
    narrow.e.predict(p.x.data(), p.rows, probabilities.data());
    const double e_loss = std::abs(loss - loss32) / loss32;
    const double e_out = relative_error(probabilities, p32);
    const double e_grad = relative_error(g, g32);
    MESSAGE(Policy::name << ": loss " << e_loss << ", outputs " << e_out << ", gradients "
                         << e_grad);
    CHECK(e_loss < 1e-2);
    CHECK(e_out < 1e-2);
    CHECK(e_grad < 1e-2);
  };
  check(mo::mixed_float16{});
  check(mo::mixed_bfloat16{});
}

TEST_CASE("16-bit policies: a CNN's outputs and gradients within 1e-2 of float32's") {
  using Net = mo::Sequential<mo::Conv2D<6, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::MaxPooling2D<2>, mo::Conv2D<8, 3, mo::Strides<2>, mo::Tanh>,
                             mo::Flatten, mo::Dense<4, mo::Softmax>>;
  check_16bit_against_float32<Net, mo::Input<10, 9, 3>>(41);
}

// The derivatives of the activations below a convolution, a Dropout and a Rescaling pass
// through float copies of their input gradients under 16-bit policies.
TEST_CASE("16-bit policies: derivatives of the activation below, within 1e-2 of float32's") {
  using Net = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::Sigmoid>, mo::Conv2D<6, 3, mo::ReLU>,
                             mo::Conv2D<5, 3, mo::Strides<2>, mo::Same, mo::Tanh>,
                             mo::Rescaling<std::ratio<1, 2>>, mo::Flatten, mo::Dense<12, mo::ReLU>,
                             mo::Dropout<std::ratio<1, 4>>, mo::Dense<4, mo::Softmax>>;
  check_16bit_against_float32<Net, mo::Input<9, 7, 2>>(43);
}

// A batch of several of the convolution's slices (64 rows each here): the average pool's input
// gradient takes ReLU's derivative through a float copy of all 256 rows, wider than anything the
// convolution itself stages.
TEST_CASE("16-bit policies: an average pool over a convolution's ReLU, at a batch of slices") {
  using Net = mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::AveragePooling2D<2>,
                             mo::Flatten, mo::Dense<4, mo::Softmax>>;
  check_16bit_against_float32<Net, mo::Input<16, 16, 1>>(47, 256);
}

TEST_CASE("16-bit policies: a convolution's float copies hold slices of rows, not the batch") {
  // Keras's MNIST convnet at the example's validation batch. Its convolutions compute on float
  // copies of one slice of rows at a time (or on no copy at all, with 16-bit kernels), and the
  // ReLU fused into them needs none: the kernel scratch stays far below the float copy of the
  // first convolution's whole output that it used to hold (22,151,168 bytes here).
  using Net = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                             mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                             mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
  constexpr std::size_t rows = 256;
  mo::Model<Net, mo::Input<28, 28, 1>, mo::mixed_bfloat16> model{3};
  std::vector<float> x(rows * 28 * 28);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 251) / 251.0f;
  const std::vector<float> p = model.predict(x);
  REQUIRE(p.size() == rows * 10);
  CHECK(std::abs(std::accumulate(p.begin(), p.begin() + 10, 0.0) - 1.0) < 1e-2);

  const std::size_t whole_output = rows * 26 * 26 * 32 * sizeof(float);
  const std::size_t scratch = model.executor().workspace_bytes();
  MESSAGE("kernel scratch " << scratch
                            << " bytes; the first convolution's output in float: " << whole_output);
  CHECK(scratch < whole_output / 2);
}

TEST_CASE("Recompute on a convolution: the same gradients from a smaller arena") {
  using Kept =
      mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Conv2D<8, 3, mo::Same, mo::ReLU>,
                     mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                     mo::Dense<4, mo::Softmax>>;
  using Recomputed =
      mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::Recompute<mo::ReLU>>,
                     mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Conv2D<8, 3, mo::Same, mo::ReLU>,
                     mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<4, mo::Softmax>>;
  using In = mo::Input<8, 8, 2>;
  using A = mo::ModelSpec<Kept, In, mo::float32>;
  using B = mo::ModelSpec<Recomputed, In, mo::float32>;
  static_assert(plan_at_lower_bound<B>(16));
  constexpr std::size_t kept = mo::plan::training_plan<A>(16).arena_bytes;
  constexpr std::size_t recomputed = mo::plan::training_plan<B>(16).arena_bytes;
  MESSAGE("arena at batch 16: " << kept << " bytes kept, " << recomputed << " recomputed");
  CHECK(recomputed < kept);

  const Problem p = random_problem<A>(16, 5);
  mo::Model<Kept, In, mo::float32> model{2};
  const std::vector<float> w = model.get_parameters();
  TrainingLoss<A> a(p, {});
  TrainingLoss<B> b(p, {});
  std::vector<float> ga, gb;
  CHECK(a(w, &ga) == b(w, &gb));
  CHECK(ga == gb);  // the same kernels on the same values: bit for bit
}
