// Learning-rate schedules at chosen steps, against Keras's formulas in
// keras/src/optimizers/schedules/learning_rate_schedule.py (the step is optimizer.iterations:
// 0 for the first update).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>

#include "memopt/core/error.hpp"
#include "memopt/train/schedules.hpp"

namespace mo = memopt;

TEST_CASE("ExponentialDecay: initial * rate^(step / decay_steps), floored when staircase") {
  const mo::ExponentialDecay smooth{
      {.initial_learning_rate = 0.1, .decay_steps = 100, .decay_rate = 0.5}};
  CHECK(smooth(0) == 0.1);
  CHECK(smooth(50) == doctest::Approx(0.1 * std::sqrt(0.5)));
  CHECK(smooth(200) == doctest::Approx(0.025));
  const mo::ExponentialDecay stairs{
      {.initial_learning_rate = 0.1, .decay_steps = 100, .decay_rate = 0.5, .staircase = true}};
  CHECK(stairs(99) == 0.1);
  CHECK(stairs(150) == doctest::Approx(0.05));
  CHECK_THROWS_AS(mo::ExponentialDecay({.decay_steps = 0}), mo::error);
}

TEST_CASE("PiecewiseConstantDecay: each value up to and including its boundary") {
  const mo::PiecewiseConstantDecay lr{{.boundaries = {10, 20}, .values = {1.0, 0.5, 0.1}}};
  CHECK(lr(0) == 1.0);
  CHECK(lr(10) == 1.0);
  CHECK(lr(11) == 0.5);
  CHECK(lr(20) == 0.5);
  CHECK(lr(21) == 0.1);
  CHECK(lr(1'000'000) == 0.1);
  CHECK_THROWS_WITH_AS(mo::PiecewiseConstantDecay({.boundaries = {10}, .values = {1.0}}),
                       doctest::Contains("1 less than the length of values"), mo::error);
  CHECK_THROWS_AS(mo::PiecewiseConstantDecay({.boundaries = {10, 10}, .values = {1, 2, 3}}),
                  mo::error);
}

TEST_CASE("PolynomialDecay: (initial - end)(1 - step/decay_steps)^power + end, or cycling") {
  const mo::PolynomialDecay lr{
      {.initial_learning_rate = 0.1, .decay_steps = 100, .end_learning_rate = 0.01, .power = 2.0}};
  CHECK(lr(0) == doctest::Approx(0.1));
  CHECK(lr(50) == doctest::Approx(0.09 * 0.25 + 0.01));
  CHECK(lr(100) == doctest::Approx(0.01));
  CHECK(lr(150) == doctest::Approx(0.01));  // held at the end
  const mo::PolynomialDecay cycling{{.initial_learning_rate = 0.1,
                                     .decay_steps = 100,
                                     .end_learning_rate = 0.01,
                                     .power = 2.0,
                                     .cycle = true}};
  CHECK(cycling(0) == doctest::Approx(0.1));
  // decay_steps stretched to 200, the first multiple above 150: p = 0.75.
  CHECK(cycling(150) == doctest::Approx(0.09 * 0.0625 + 0.01));
  CHECK(mo::PolynomialDecay{}.options.end_learning_rate == 0.0001);
}

TEST_CASE("CosineDecay: half a cosine from initial to alpha * initial, then held") {
  const mo::CosineDecay lr{{.initial_learning_rate = 1.0, .decay_steps = 100, .alpha = 0.1}};
  CHECK(lr(0) == doctest::Approx(1.0));
  CHECK(lr(25) == doctest::Approx(0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)) + 0.1));
  CHECK(lr(50) == doctest::Approx(0.55));
  CHECK(lr(100) == doctest::Approx(0.1));
  CHECK(lr(200) == doctest::Approx(0.1));
}

TEST_CASE("CosineDecay with warmup (Keras 3): a line to warmup_target, then the cosine from it") {
  const mo::CosineDecay lr{{.initial_learning_rate = 0.0,
                            .decay_steps = 100,
                            .warmup_target = 1e-3,
                            .warmup_steps = 10}};
  CHECK(lr(0) == 0.0);
  CHECK(lr(5) == doctest::Approx(0.5e-3));
  CHECK(lr(10) == doctest::Approx(1e-3));
  CHECK(lr(60) == doctest::Approx(0.5e-3));
  CHECK(lr(110) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(lr(500) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK_THROWS_AS(mo::CosineDecay({.decay_steps = 0}), mo::error);
}

TEST_CASE("LearningRate: a number, a built-in schedule or any callable of the step") {
  mo::LearningRate constant = 0.01;
  CHECK(constant(0) == 0.01);
  CHECK(constant(1000) == 0.01);
  constant.set(0.005);
  CHECK(constant(3) == 0.005);
  const mo::LearningRate inverse = [](std::int64_t step) { return 0.1 / double(step + 1); };
  CHECK(inverse.is_schedule());
  CHECK(inverse(4) == doctest::Approx(0.02));
  mo::LearningRate cosine = mo::CosineDecay{{.initial_learning_rate = 1.0, .decay_steps = 10}};
  const mo::LearningRate copy = cosine;  // copies share the schedule, which is immutable
  CHECK(copy(5) == doctest::Approx(0.5));
  CHECK_THROWS_AS(cosine.set(0.1), mo::error);
}
