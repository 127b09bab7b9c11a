#pragma once
// LearningRate: an optimizer's learning rate, a constant or a schedule of the iteration count.

#include <concepts>
#include <cstdint>
#include <memory>
#include <utility>

#include "memopt/core/error.hpp"

namespace memopt {

/// Keras's `LearningRateSchedule`: the learning rate as a function of `optimizer.iterations`,
/// the number of updates applied before this one (0 for the first). Anything callable with
/// the step and returning a number is one, a lambda included.
///
/// ```cpp
/// auto inverse = [](std::int64_t step) { return 0.1 / double(step + 1); };
/// model.compile(mo::SGD{{.learning_rate = inverse}}, mo::SparseCategoricalCrossentropy{});
/// ```
template <class S>
concept LearningRateSchedule = std::copy_constructible<S> && !std::convertible_to<S, double> &&
                               requires(const S& s, std::int64_t step) {
  { s(step) } -> std::convertible_to<double>;
};

/// What an optimizer's `learning_rate` option holds: a number (`.learning_rate = 1e-3`) or a
/// schedule (`.learning_rate = mo::CosineDecay{{...}}`), evaluated at each update from the
/// iteration count, so that a resumed run continues the schedule where it stopped.
///
/// ```cpp
/// mo::LearningRate lr = mo::ExponentialDecay{{.initial_learning_rate = 0.1,
///                                             .decay_steps = 100, .decay_rate = 0.5}};
/// double at_200 = lr(200);  // 0.025
/// ```
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}  // NOLINT: implicit, as Keras takes a float
  // The same_as test comes first: copying a LearningRate must not ask whether a LearningRate
  // is a schedule, which would ask whether it is copyable (clang 16 rejects the recursion).
  template <class S>
  requires(!std::same_as<S, LearningRate> && LearningRateSchedule<S>)
      LearningRate(S schedule)  // NOLINT: implicit, as Keras takes a schedule
      : schedule_(std::make_shared<const Holder<S>>(std::move(schedule))) {}

  /// The learning rate of the update that follows `iteration` updates.
  double operator()(std::int64_t iteration) const {
    return schedule_ ? schedule_->at(iteration) : value_;
  }
  bool is_schedule() const { return schedule_ != nullptr; }

  /// Keras's `optimizer.learning_rate = value` (ReduceLROnPlateau, LearningRateScheduler):
  /// replaces a constant; a schedule cannot be overwritten, as in Keras.
  void set(double value) {
    if (schedule_)
      throw error(
          "learning_rate: this optimizer was created with a schedule as its learning rate, "
          "hence its learning rate is not settable; create the optimizer with a number "
          "(.learning_rate = 1e-3) to change it during training");
    value_ = value;
  }

 private:
  struct Schedule {
    virtual ~Schedule() = default;
    virtual double at(std::int64_t iteration) const = 0;
  };
  template <class S>
  struct Holder final : Schedule {
    explicit Holder(S s) : s_(std::move(s)) {}
    double at(std::int64_t iteration) const override { return static_cast<double>(s_(iteration)); }
    S s_;
  };

  double value_ = 0;
  std::shared_ptr<const Schedule> schedule_;  // immutable, so copies may share it
};

}  // namespace memopt
