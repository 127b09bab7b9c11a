// Residual<Block, Shortcut>: the Sequential's layout and wiring, plans at the liveness lower
// bound with the branch point kept until both branches have read it, gradients against a
// float64 reference and against central differences (identity and convolutional shortcuts,
// nested blocks, a block on the model's input, the tutorial's Xception block), 16-bit
// policies, predict, summary and checkpoints with Keras's names. Random, non-zero data.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "step_loss.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

// Two residual blocks of Dense layers: an identity shortcut around two layers, then a Dense
// shortcut. Layers: dense, dense_1, dense_2, add, dense_3, dense_4, add_1, dense_5.
using DenseNet =
    mo::Sequential<mo::Dense<8, mo::Tanh>,
                   mo::Residual<mo::Sequential<mo::Dense<12, mo::ReLU>, mo::Dense<8, mo::Sigmoid>>>,
                   mo::Residual<mo::Dense<5, mo::Tanh>, mo::Dense<5>>, mo::Dense<3, mo::Softmax>>;
using DenseIn = mo::Input<6>;
using DenseSpec = mo::ModelSpec<DenseNet, DenseIn, mo::float32>;

static_assert(DenseSpec::layer_count == 8 && DenseSpec::depth == 8);
static_assert(std::is_same_v<mo::type_list_at<3, DenseSpec::layers>, mo::Add>);
static_assert(std::is_same_v<mo::type_list_at<5, DenseSpec::layers>, mo::Dense<5>>);
// The block reads the branch point, the Add the block's output and the branch point.
static_assert(DenseSpec::nodes[1].sources[0] == 0 && DenseSpec::nodes[3].input_count == 2);
static_assert(DenseSpec::nodes[3].sources[0] == 2 && DenseSpec::nodes[3].sources[1] == 0);
// The second block's shortcut reads the first Add, as its block does.
static_assert(DenseSpec::nodes[4].sources[0] == 3 && DenseSpec::nodes[5].sources[0] == 3);
static_assert(DenseSpec::nodes[5].in == mo::vector_shape(8));
static_assert(DenseSpec::nodes[6].sources[0] == 4 && DenseSpec::nodes[6].sources[1] == 5);
static_assert(DenseSpec::nodes[7].sources[0] == 6);
static_assert(DenseSpec::parameter_count ==
              (6 * 8 + 8) + (8 * 12 + 12) + (12 * 8 + 8) + 2 * (8 * 5 + 5) + (5 * 3 + 3));

// The plan: arena at the lower bound; the branch point lives until the Add and the block's
// weight gradient have read it; the Add's dX writes its gradient first, the block's first
// layer adds a second one.
template <class Spec>
constexpr bool plan_at_lower_bound(std::size_t batch) {
  const auto p = mo::plan::training_plan<Spec>(batch);
  return p.is_valid() && p.arena_bytes == p.lower_bound_bytes();
}
static_assert(plan_at_lower_bound<DenseSpec>(8) && plan_at_lower_bound<DenseSpec>(32));
constexpr auto kDensePlan = mo::plan::training_plan<DenseSpec>(8);
constexpr auto kDenseSchedule = mo::plan::training_schedule<DenseSpec>();
static_assert(kDensePlan.find(mo::plan::BufferRole::activation, 0).last >=
              kDenseSchedule.index(mo::plan::StepKind::weight_grad, 1));
static_assert(kDensePlan.find(mo::plan::BufferRole::activation_grad, 0).first ==
              kDenseSchedule.index(mo::plan::StepKind::input_grad, 3));
static_assert(kDensePlan.contains(mo::plan::BufferRole::branch_grad, 1, 0));
static_assert(!kDensePlan.contains(mo::plan::BufferRole::branch_grad, 3, 1));
// Inference keeps the branch point until the Add.
static_assert(
    mo::plan::inference_plan<DenseSpec>(8).find(mo::plan::BufferRole::activation, 0).last == 3);

// Keras's tutorial block (image_classification_from_scratch), scaled down: ReLU,
// SeparableConv2D, BatchNormalization twice, a strided max pool, and a strided 1x1 Conv2D as
// the shortcut; then the tutorial's head. `Act` and `Pool` replace ReLU and the max pool where
// a check needs a smooth loss (central differences across a kink measure the kink).
template <std::size_t Filters, class Act = mo::ReLU,
          class Pool = mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>
using XceptionBlock = mo::Residual<
    mo::Sequential<mo::Activation<Act>, mo::SeparableConv2D<Filters, 3, mo::Same>,
                   mo::BatchNormalization, mo::Activation<Act>,
                   mo::SeparableConv2D<Filters, 3, mo::Same>, mo::BatchNormalization, Pool>,
    mo::Conv2D<Filters, 1, mo::Strides<2>, mo::Same>>;
template <class Act = mo::ReLU, class Pool = mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>
using XceptionNetOf =
    mo::Sequential<mo::Rescaling<std::ratio<1, 2>>, mo::Conv2D<4, 3, mo::Strides<2>, mo::Same>,
                   mo::BatchNormalization, mo::Activation<Act>, XceptionBlock<6, Act, Pool>,
                   XceptionBlock<8, Act, Pool>, mo::SeparableConv2D<8, 3, mo::Same>,
                   mo::BatchNormalization, mo::Activation<Act>, mo::GlobalAveragePooling2D,
                   mo::Dense<3, mo::Softmax>>;
using XceptionNet = XceptionNetOf<>;
using SmoothXceptionNet = XceptionNetOf<mo::Tanh, mo::AveragePooling2D<2>>;
using XceptionIn = mo::Input<16, 16, 3>;
using XceptionSpec = mo::ModelSpec<XceptionNet, XceptionIn, mo::float32>;
static_assert(XceptionSpec::layer_count == 27);
static_assert(plan_at_lower_bound<XceptionSpec>(4) && plan_at_lower_bound<XceptionSpec>(32));
static_assert(plan_at_lower_bound<mo::ModelSpec<XceptionNet, XceptionIn, mo::mixed_bfloat16>>(32));

// Keras's tutorial model itself, at 180x180 (augmentation, the entry block, blocks of 256, 512
// and 728 filters, SeparableConv2D(1024), Dropout, Dense(1)): 39 layers and 116 buffers, past
// the exact packing search's 64, where greedy placement alone left one gradient 7.1 MB above
// the bound until assign_offsets' repair pass.
using TutorialNet =
    mo::Sequential<mo::RandomFlip<mo::Horizontal>, mo::RandomRotation<std::ratio<1, 10>>,
                   mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<128, 3, mo::Strides<2>, mo::Same>,
                   mo::BatchNormalization, mo::Activation<mo::ReLU>, XceptionBlock<256>,
                   XceptionBlock<512>, XceptionBlock<728>, mo::SeparableConv2D<1024, 3, mo::Same>,
                   mo::BatchNormalization, mo::Activation<mo::ReLU>, mo::GlobalAveragePooling2D,
                   mo::Dropout<std::ratio<1, 4>>, mo::Dense<1>>;
using TutorialIn = mo::Input<180, 180, 3>;
static_assert(mo::ModelSpec<TutorialNet, TutorialIn, mo::float32>::layer_count == 39);
static_assert(plan_at_lower_bound<mo::ModelSpec<TutorialNet, TutorialIn, mo::float32>>(32));
static_assert(plan_at_lower_bound<mo::ModelSpec<TutorialNet, TutorialIn, mo::mixed_bfloat16>>(128));

// A loss of `rows` random samples of `Spec`'s inputs and 3 classes.
template <class Spec>
mo::testing::StepLoss<Spec> random_loss(std::size_t rows, std::uint64_t seed, float scale = 1.5f) {
  mo::Rng rng(seed);
  std::vector<float> x(rows * Spec::inputs);
  std::vector<std::int32_t> y(rows);
  for (float& v : x) v = rng.uniform(-scale, scale);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  return mo::testing::StepLoss<Spec>(std::move(x), std::move(y));
}

// Model M's initial weights, moved off Glorot's draws so that no bias is zero.
template <class M>
std::vector<float> perturbed_weights(std::uint64_t seed) {
  M model{seed};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(seed + 100);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  return w;
}

// Every gradient of `Spec`'s step against central differences.
template <class Spec>
double central_difference_error(mo::testing::StepLoss<Spec>& loss, std::vector<float> w, float h) {
  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  std::vector<double> numeric(w.size());
  for (std::size_t j = 0; j < w.size(); ++j) numeric[j] = loss.central_difference(w, j, h);
  return relative_error(analytic, numeric);
}

// DenseNet's loss and gradients in float64, written out layer by layer.
struct DenseLayer {
  std::size_t in, out, offset;  // the kernel [in, out] at offset, then the bias
};
std::vector<double> dense_forward(const std::vector<double>& w, DenseLayer d,
                                  const std::vector<double>& x, std::size_t rows) {
  std::vector<double> z(rows * d.out);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < d.out; ++o) {
      double s = w[d.offset + d.in * d.out + o];
      for (std::size_t i = 0; i < d.in; ++i) s += x[r * d.in + i] * w[d.offset + i * d.out + o];
      z[r * d.out + o] = s;
    }
  return z;
}
// Adds dW and db into `g`; returns dL/dx.
std::vector<double> dense_backward(const std::vector<double>& w, DenseLayer d,
                                   const std::vector<double>& x, const std::vector<double>& dz,
                                   std::size_t rows, std::vector<double>& g) {
  std::vector<double> dx(rows * d.in, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < d.out; ++o) {
      const double e = dz[r * d.out + o];
      g[d.offset + d.in * d.out + o] += e;
      for (std::size_t i = 0; i < d.in; ++i) {
        g[d.offset + i * d.out + o] += x[r * d.in + i] * e;
        dx[r * d.in + i] += w[d.offset + i * d.out + o] * e;
      }
    }
  return dx;
}
template <class F>
std::vector<double> map(const std::vector<double>& v, F f) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f(v[i]);
  return out;
}
std::vector<double> plus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}
std::vector<double> times(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] * b[i];
  return out;
}

double dense_net_reference(const std::vector<float>& wf, const std::vector<float>& xf,
                           const std::vector<std::int32_t>& y, std::vector<double>& g) {
  const std::vector<double> w(wf.begin(), wf.end()), x(xf.begin(), xf.end());
  const std::size_t rows = y.size();
  std::size_t at = 0;
  const auto layer = [&](std::size_t in, std::size_t out) {
    const DenseLayer d{in, out, at};
    at += in * out + out;
    return d;
  };
  const DenseLayer d0 = layer(6, 8), d1 = layer(8, 12), d2 = layer(12, 8), d4 = layer(8, 5),
                   d5 = layer(8, 5), d7 = layer(5, 3);
  const auto tanh_ = [](double v) { return std::tanh(v); };
  const auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const auto relu = [](double v) { return v > 0 ? v : 0.0; };
  const auto h0 = map(dense_forward(w, d0, x, rows), tanh_);
  const auto a1 = map(dense_forward(w, d1, h0, rows), relu);
  const auto a2 = map(dense_forward(w, d2, a1, rows), sigmoid);
  const auto s3 = plus(a2, h0);
  const auto a4 = map(dense_forward(w, d4, s3, rows), tanh_);
  const auto a5 = dense_forward(w, d5, s3, rows);
  const auto s6 = plus(a4, a5);
  auto dz = dense_forward(w, d7, s6, rows);  // logits, then dL/dz
  double loss = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    double m = dz[r * 3], sum = 0.0;
    for (std::size_t c = 1; c < 3; ++c) m = std::max(m, dz[r * 3 + c]);
    for (std::size_t c = 0; c < 3; ++c) sum += std::exp(dz[r * 3 + c] - m);
    loss -= dz[r * 3 + std::size_t(y[r])] - m - std::log(sum);
    for (std::size_t c = 0; c < 3; ++c)
      dz[r * 3 + c] = (std::exp(dz[r * 3 + c] - m) / sum - (c == std::size_t(y[r]) ? 1.0 : 0.0)) /
                      static_cast<double>(rows);
  }
  g.assign(w.size(), 0.0);
  const auto ds6 = dense_backward(w, d7, s6, dz, rows, g);
  const auto dz4 = times(ds6, map(a4, [](double a) { return 1.0 - a * a; }));
  const auto ds3 =
      plus(dense_backward(w, d4, s3, dz4, rows, g), dense_backward(w, d5, s3, ds6, rows, g));
  const auto dz2 = times(ds3, map(a2, [](double a) { return a * (1.0 - a); }));
  const auto da1 = dense_backward(w, d2, a1, dz2, rows, g);
  const auto dz1 = times(da1, map(a1, [](double a) { return a > 0 ? 1.0 : 0.0; }));
  const auto dh0 = plus(dense_backward(w, d1, h0, dz1, rows, g), ds3);
  const auto dz0 = times(dh0, map(h0, [](double a) { return 1.0 - a * a; }));
  dense_backward(w, d0, x, dz0, rows, g);
  return loss / static_cast<double>(rows);
}

}  // namespace

TEST_CASE("Residual of Dense layers: loss and every gradient against a float64 reference") {
  using M = mo::Model<DenseNet, DenseIn, mo::float32>;
  const std::vector<float> w = perturbed_weights<M>(3);
  mo::Rng rng(41);
  std::vector<float> x(10 * 6);
  std::vector<std::int32_t> y(10);
  for (float& v : x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  mo::testing::StepLoss<DenseSpec> loss(x, y);
  std::vector<float> got;
  const double l = loss(w, &got);
  std::vector<double> want;
  const double ref = dense_net_reference(w, x, y, want);
  const double err = relative_error(got, want);
  MESSAGE("loss " << l << " (float64 " << ref << "), gradient relative error " << err);
  CHECK(l == doctest::Approx(ref).epsilon(1e-6));
  CHECK(err < 1e-5);
}

TEST_CASE("Residual: every gradient against central differences") {
  SUBCASE("two Dense blocks, identity and Dense shortcuts") {
    auto loss = random_loss<DenseSpec>(6, 7);
    const double err = central_difference_error(
        loss, perturbed_weights<mo::Model<DenseNet, DenseIn, mo::float32>>(5), 2e-3f);
    MESSAGE("relative error " << err);
    CHECK(err < 5e-3);
  }
  SUBCASE("a block on the model's input, and a block nested in a block") {
    using Net = mo::Sequential<
        mo::Residual<mo::Sequential<mo::Dense<6, mo::GELU>, mo::Dense<6, mo::Tanh>>>,
        mo::Residual<mo::Sequential<mo::Dense<7, mo::ReLU>, mo::Residual<mo::Dense<7, mo::Tanh>>>,
                     mo::Dense<7, mo::Sigmoid>>,
        mo::Dense<3, mo::Softmax>>;
    using Spec = mo::ModelSpec<Net, mo::Input<6>, mo::float32>;
    static_assert(Spec::nodes[2].sources[0] == 1 && Spec::nodes[2].sources[1] == -1);
    static_assert(plan_at_lower_bound<Spec>(6));
    auto loss = random_loss<Spec>(6, 8);
    const double err = central_difference_error(
        loss, perturbed_weights<mo::Model<Net, mo::Input<6>, mo::float32>>(6), 2e-3f);
    MESSAGE("relative error " << err);
    CHECK(err < 5e-3);
  }
  SUBCASE("the tutorial's Xception blocks with Tanh and average pooling") {
    using Spec = mo::ModelSpec<SmoothXceptionNet, XceptionIn, mo::float32>;
    auto loss = random_loss<Spec>(4, 9, 2.0f);
    const double err = central_difference_error(
        loss, perturbed_weights<mo::Model<SmoothXceptionNet, XceptionIn, mo::float32>>(7), 1e-2f);
    MESSAGE("relative error " << err);
    CHECK(err < 2e-3);
  }
}

// The tutorial's block with ReLU and max pooling: a shortcut of zero weights adds nothing, so
// the loss and the block's gradients are those of the same layers as a plain chain, and the
// shortcut's kernel gradient is x^T dy, nonzero.
TEST_CASE("Residual with a zero shortcut computes what its block alone computes") {
  using Block =
      mo::Sequential<mo::Activation<mo::ReLU>, mo::SeparableConv2D<6, 3, mo::Same>,
                     mo::BatchNormalization, mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>;
  using Stem = mo::Sequential<mo::Conv2D<4, 3, mo::Strides<2>, mo::Same>, mo::BatchNormalization,
                              mo::Activation<mo::ReLU>>;
  using Head = mo::Sequential<mo::GlobalAveragePooling2D, mo::Dense<3, mo::Softmax>>;
  using ResidualNet =
      mo::Sequential<Stem, mo::Residual<Block, mo::Conv2D<6, 1, mo::Strides<2>>>, Head>;
  using ChainNet = mo::Sequential<Stem, Block, Head>;
  using R = mo::ModelSpec<ResidualNet, XceptionIn, mo::float32>;
  using C = mo::ModelSpec<ChainNet, XceptionIn, mo::float32>;
  constexpr std::size_t shortcut = 4 * 6 + 6, head = 6 * 3 + 3;
  static_assert(R::parameter_count == C::parameter_count + shortcut);
  const std::vector<float> wc = perturbed_weights<mo::Model<ChainNet, XceptionIn, mo::float32>>(4);
  std::vector<float> wr(wc.begin(), wc.end() - std::ptrdiff_t(head));
  wr.insert(wr.end(), shortcut, 0.0f);
  wr.insert(wr.end(), wc.end() - std::ptrdiff_t(head), wc.end());
  auto lr = random_loss<R>(6, 13, 2.0f);
  auto lc = random_loss<C>(6, 13, 2.0f);
  std::vector<float> gr, gc;
  const double loss_r = lr(wr, &gr), loss_c = lc(wc, &gc);
  CHECK(loss_r > 0.0);
  CHECK(loss_r == doctest::Approx(loss_c).epsilon(1e-6));
  std::vector<float> block(gr.begin(), gr.end() - std::ptrdiff_t(shortcut + head));
  block.insert(block.end(), gr.end() - std::ptrdiff_t(head), gr.end());
  const double err = relative_error(block, gc);
  MESSAGE("relative error of the other gradients " << err);
  CHECK(err < 1e-5);
  double shortcut_norm = 0.0;
  for (std::size_t j = gr.size() - shortcut - head; j < gr.size() - head; ++j)
    shortcut_norm += double(gr[j]) * gr[j];
  CHECK(shortcut_norm > 1e-8);
}

// Recompute inside a block: the recomputed layer reads the branch point, kept for the Add.
TEST_CASE("Recompute inside a residual block gives the same gradients, bit for bit") {
  using Plain = mo::Sequential<
      mo::Dense<8, mo::Tanh>,
      mo::Residual<mo::Sequential<mo::Dense<32, mo::ReLU>, mo::Dense<32, mo::GELU>, mo::Dense<8>>>,
      mo::Dense<3, mo::Softmax>>;
  using Recomputed = mo::Sequential<
      mo::Dense<8, mo::Tanh>,
      mo::Residual<mo::Sequential<mo::Dense<32, mo::Recompute<mo::ReLU>>,
                                  mo::Dense<32, mo::Recompute<mo::GELU>>, mo::Dense<8>>>,
      mo::Dense<3, mo::Softmax>>;
  using P = mo::ModelSpec<Plain, mo::Input<6>, mo::float32>;
  using R = mo::ModelSpec<Recomputed, mo::Input<6>, mo::float32>;
  static_assert(plan_at_lower_bound<R>(64));
  static_assert(
      mo::plan::training_plan<R>(64).contains(mo::plan::BufferRole::recomputed_activation, 1));
  // Without the two 32-wide outputs waiting for backward the arena shrinks.
  static_assert(mo::plan::training_plan<R>(256).arena_bytes <
                mo::plan::training_plan<P>(256).arena_bytes);
  const std::vector<float> w = perturbed_weights<mo::Model<Plain, mo::Input<6>, mo::float32>>(9);
  auto lp = random_loss<P>(16, 14);
  auto lr = random_loss<R>(16, 14);
  std::vector<float> gp, gr;
  CHECK(lp(w, &gp) == lr(w, &gr));
  CHECK(gp == gr);
}

TEST_CASE("Residual under mixed_bfloat16 and mixed_float16: gradients within 16-bit rounding") {
  const std::vector<float> w =
      perturbed_weights<mo::Model<SmoothXceptionNet, XceptionIn, mo::float32>>(8);
  const auto gradients = [&](auto policy) {
    using Spec = mo::ModelSpec<SmoothXceptionNet, XceptionIn, decltype(policy)>;
    auto loss = random_loss<Spec>(8, 10, 2.0f);
    std::vector<float> g;
    CHECK(std::isfinite(loss(w, &g)));
    return g;
  };
  const auto f32 = gradients(mo::float32{});
  const double bf16 = relative_error(gradients(mo::mixed_bfloat16{}), f32);
  const double f16 = relative_error(gradients(mo::mixed_float16{}), f32);
  MESSAGE("relative to float32: bfloat16 " << bf16 << ", float16 " << f16);
  CHECK(bf16 < 3e-2);
  CHECK(f16 < 5e-3);
}

TEST_CASE("a residual model learns, predicts as it trains, and keeps Keras's names") {
  using M = mo::Model<XceptionNet, XceptionIn, mo::float32>;
  mo::Rng rng(12);
  const std::size_t n = XceptionIn::shape.size();
  std::vector<float> x(96 * n);
  std::vector<std::int32_t> y(96);
  for (std::size_t r = 0; r < 96; ++r) {
    y[r] = static_cast<std::int32_t>(r % 3);
    for (std::size_t i = 0; i < n; ++i)
      x[r * n + i] = rng.uniform(-1.0f, 1.0f) + (i % 3 == std::size_t(y[r]) ? 1.5f : 0.0f);
  }
  M model{5};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  const auto h =
      model.fit(mo::data::from(x, y, n) | mo::data::batch(16), {.epochs = 6, .verbose = 0});
  const auto& losses = h.history.at("loss");
  MESSAGE("loss " << losses.front() << " -> " << losses.back());
  CHECK(losses.back() < 0.7 * losses.front());
  CHECK(model.evaluate(mo::data::from(x, y, n) | mo::data::batch(32)).accuracy > 0.6);

  const std::string summary = model.summary_string();
  INFO(summary);
  CHECK(summary.find("add (Add)") != std::string::npos);
  CHECK(summary.find("add_1 (Add)") != std::string::npos);
  CHECK(summary.find("conv2d_1 (Conv2D)") != std::string::npos);
  CHECK(summary.find("Connected to") != std::string::npos);
  // The first Add reads the block's max pool and the shortcut; the shortcut, the block's input.
  CHECK(
      summary.find(
          "add (Add)                                         (None, 4, 4, 6)                    0  "
          "max_pooling2d, conv2d_1") != std::string::npos);

  mo::testing::TempDir dir;
  model.save_weights(dir / "w.safetensors");
  const auto file = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  // Keras numbers layers per kind in the functional model's order: the block, its shortcut.
  CHECK(file.find("conv2d_1/kernel") != nullptr);  // the first block's shortcut
  CHECK(file.find("conv2d_2/kernel") != nullptr);  // the second's
  CHECK(file.find("separable_conv2d_4/pointwise_kernel") != nullptr);
  CHECK(file.find("batch_normalization_5/moving_variance") != nullptr);
  M restored{6};
  restored.load_weights(dir / "w.safetensors");
  CHECK(restored.predict(x) == model.predict(x));
}
