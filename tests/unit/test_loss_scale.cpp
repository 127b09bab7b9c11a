// Dynamic loss scaling: Keras's schedule, and a training step that meets an inf.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

TEST_CASE("DynamicLossScale starts at 2^15, halves on inf, doubles after 2000 good steps") {
  mo::DynamicLossScale s;
  CHECK(s.value() == 32768.0f);
  CHECK_FALSE(s.update(false));
  CHECK(s.value() == 16384.0f);
  for (int i = 0; i < 1999; ++i) REQUIRE(s.update(true));
  CHECK(s.value() == 16384.0f);
  CHECK(s.update(true));
  CHECK(s.value() == 32768.0f);
  // A non-finite step resets the run of good steps.
  for (int i = 0; i < 1000; ++i) s.update(true);
  s.update(false);
  for (int i = 0; i < 1999; ++i) s.update(true);
  CHECK(s.value() == 16384.0f);
}

TEST_CASE("NoLossScale applies finite steps only") {
  mo::NoLossScale s;
  CHECK(s.value() == 1.0f);
  CHECK(s.update(true));
  CHECK_FALSE(s.update(false));
}

TEST_CASE("an inf in a mixed_float16 step halves the scale and skips the update") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<3, mo::Softmax>>;
  mo::Model<Net, mo::Input<4>, mo::mixed_float16> model{5};
  auto& ex = model.executor();
  const mo::Adam adam{};
  ex.prepare(2, adam.slots() * model.parameter_count);

  std::vector<float> x = {0.5f, -0.25f, 1.0f, 0.75f, -1.0f, 0.5f, 0.25f, -0.5f};
  const std::vector<std::int32_t> y = {0, 2};
  mo::DynamicLossScale scale;
  std::int64_t iterations = 0;

  memopt::train::training_step(ex, x.data(), y.data(), 2, adam, iterations,
                               scale);  // a finite step
  CHECK(iterations == 1);
  CHECK(scale.value() == 32768.0f);
  const std::vector<float> before = model.get_weights();
  const std::vector<float> state_before = model.get_optimizer_state();

  x[1] = 1e6f;  // beyond half's range: inf in the arena, so non-finite gradients
  memopt::train::training_step(ex, x.data(), y.data(), 2, adam, iterations, scale);
  CHECK(scale.value() == 16384.0f);
  CHECK(iterations == 1);
  CHECK(model.get_weights() == before);
  CHECK(model.get_optimizer_state() == state_before);
  CHECK(ex.take_totals().skipped_steps == 1);
}
