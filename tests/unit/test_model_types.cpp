// Compile-time facts about models: shapes, parameter counts, names, policies, 16-bit types.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

// The card's spelling, exactly as written.
using Card = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using CardSpec = mo::ModelSpec<Card, mo::Input<784>, mo::float32>;

static_assert(Card::depth == 2);
static_assert(CardSpec::dims == std::array<std::size_t, 3>{784, 128, 10});
static_assert(CardSpec::layer_parameters(0) == 784 * 128 + 128);
static_assert(CardSpec::layer_parameters(1) == 128 * 10 + 10);
static_assert(CardSpec::parameter_count == 101'770);
static_assert(CardSpec::kernel_offset(1) == 100'480 && CardSpec::bias_offset(1) == 101'760);
static_assert(CardSpec::ends_in_softmax);
static_assert(mo::Dense<128, mo::ReLU>::parameters(784) == 100'480);
static_assert(mo::Layer<mo::Dense<3>> && !mo::Layer<int>);

using Deep = mo::Sequential<mo::Dense<64, mo::GELU>, mo::Dense<32, mo::Tanh>,
                            mo::Dense<16, mo::Sigmoid>, mo::Dense<8>, mo::Dense<3, mo::Softmax>>;
using DeepSpec = mo::ModelSpec<Deep, mo::Input<5>, mo::mixed_bfloat16>;
static_assert(DeepSpec::depth == 5 && DeepSpec::outputs == 3 && DeepSpec::inputs == 5);
static_assert(DeepSpec::parameter_count ==
              (5 * 64 + 64) + (64 * 32 + 32) + (32 * 16 + 16) + (16 * 8 + 8) + (8 * 3 + 3));
static_assert(DeepSpec::activations[0] == mo::ActivationKind::gelu);
static_assert(std::same_as<DeepSpec::compute_type, mo::bfloat16>);

// Policies name their types; a user-defined policy is accepted by the concept.
static_assert(std::same_as<mo::mixed_float16::compute_type, mo::half>);
static_assert(std::same_as<mo::mixed_float16::variable_type, float>);
static_assert(mo::mixed_float16::loss_scaling && !mo::mixed_bfloat16::loss_scaling);
struct MyPolicy {
  using compute_type = mo::half;
  using variable_type = float;
  using accumulate_type = float;
  static constexpr bool loss_scaling = false;
  static constexpr std::string_view name = "my_policy";
};
static_assert(mo::Policy<MyPolicy> && !mo::Policy<int>);

// The arena is planned at compile time and is never larger than one buffer per tensor.
using CardModel = mo::Model<Card, mo::Input<784>, mo::mixed_float16>;
static_assert(CardModel::arena_bytes(32) <= CardModel::naive_bytes(32));
static_assert(CardModel::arena_bytes(32) >= CardModel::lower_bound_bytes(32));
static_assert(mo::Model<Card, mo::Input<784>>::arena_bytes(32) > CardModel::arena_bytes(32));

// The CPU backend's executors answer every hook Model calls (train/executor.hpp), for Dense
// models and convnets alike.
static_assert(mo::train::Executor<CardModel::executor_type>);
static_assert(
    mo::train::Executor<mo::Model<mo::Sequential<mo::Conv2D<4, 3>, mo::MaxPooling2D<2>, mo::Flatten,
                                                 mo::Dense<2, mo::Softmax>>,
                                  mo::Input<8, 8, 1>, mo::mixed_bfloat16>::executor_type>);
static_assert(CardModel::executor_type::reduces_gradients);

}  // namespace

TEST_CASE("Keras names layers dense, dense_1, dense_2") {
  CHECK(DeepSpec::layer_name(0) == "dense");
  CHECK(DeepSpec::layer_name(1) == "dense_1");
  CHECK(DeepSpec::layer_name(4) == "dense_4");
}

TEST_CASE("half converts like IEEE binary16, rounding to nearest even") {
  CHECK(mo::half(1.0f).bits == 0x3c00);
  CHECK(mo::half(-2.0f).bits == 0xc000);
  CHECK(mo::half(65504.0f).bits == 0x7bff);
  CHECK(mo::half(65520.0f).bits == 0x7c00);                      // rounds past the largest: inf
  CHECK(mo::half(std::ldexp(1.0f, -24)).bits == 0x0001);         // smallest subnormal
  CHECK(mo::half(std::ldexp(1.0f, -26)).bits == 0x0000);         // below half of it: zero
  CHECK(mo::half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);  // tie goes to even
  CHECK(mo::half(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02);
  CHECK(std::isnan(static_cast<float>(mo::half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(static_cast<float>(mo::half(std::numeric_limits<float>::infinity()))));
  // Every finite half survives a round trip through float.
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = mo::half::from_bits(static_cast<std::uint16_t>(b));
    const float f = h;
    if (std::isnan(f)) continue;
    REQUIRE(mo::half(f).bits == h.bits);
  }
}

TEST_CASE("bfloat16 keeps float's range with 8 bits of mantissa") {
  CHECK(mo::bfloat16(1.0f).bits == 0x3f80);
  CHECK(static_cast<float>(mo::bfloat16(3.14159f)) == 3.140625f);
  CHECK(static_cast<float>(mo::bfloat16(1e30f)) == doctest::Approx(1e30f).epsilon(0.01));
  CHECK(std::isnan(static_cast<float>(mo::bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("summary lists layers, parameters, fused kernels and the arena") {
  mo::Model<Card, mo::Input<784>, mo::mixed_float16> model{1};
  const std::string s = model.summary_string(32);
  CHECK(s.find("dense (Dense)") != std::string::npos);
  CHECK(s.find("dense_1 (Dense)") != std::string::npos);
  CHECK(s.find("Total params: 101,770") != std::string::npos);
  CHECK(s.find("matmul + bias + relu") != std::string::npos);
  CHECK(s.find(std::to_string(CardModel::arena_bytes(32))) != std::string::npos);
}

TEST_CASE(
    "initial_weights: Glorot-uniform kernels within their limit, zeros and ones as declared") {
  using Net = mo::Sequential<mo::Conv2D<6, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::Flatten, mo::Dense<4, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<5, 5, 2>, mo::float32>;
  std::vector<float> w(Spec::parameter_count, -7.0f), s(Spec::state_count, -7.0f);
  mo::initial_weights(Spec::weights, 42, w, s);

  for (const mo::WeightEntry& e : Spec::weights) {
    CAPTURE(e.decl.name);
    const float* v = (e.decl.trainable ? w : s).data() + e.offset;
    const std::span<const float> values(v, e.decl.size());
    if (e.decl.init == mo::Init::glorot_uniform) {
      const double limit = std::sqrt(6.0 / double(e.decl.fan_in + e.decl.fan_out));
      double sum_sq = 0;
      for (float x : values) {
        CHECK(std::abs(x) <= limit);
        sum_sq += double(x) * x;
      }
      // Uniform on [-limit, limit] has variance limit^2 / 3: the draws fill the range.
      const double variance = sum_sq / double(values.size());
      CHECK(variance == doctest::Approx(limit * limit / 3).epsilon(0.35));
    } else {
      const float expected = e.decl.init == mo::Init::ones ? 1.0f : 0.0f;
      for (float x : values) CHECK(x == expected);
    }
  }
  // Every value was written; the same seed draws the same weights, another seed others.
  CHECK(std::ranges::count(w, -7.0f) == 0);
  CHECK(std::ranges::count(s, -7.0f) == 0);
  std::vector<float> again(w.size()), other(w.size()), s2(s.size());
  mo::initial_weights(Spec::weights, 42, again, s2);
  mo::initial_weights(Spec::weights, 43, other, s2);
  CHECK(again == w);
  CHECK(other != w);
  // A Model draws its weights so.
  mo::Model<Net, mo::Input<5, 5, 2>> model{42};
  CHECK(model.get_parameters() == w);
  CHECK(model.get_state_weights() == s);
}
