#pragma once
// StepLoss: the mean training loss of one CPU step on a fixed batch as a function of the
// weights, with its gradients, for checks against central differences.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/memopt.hpp>

namespace memopt::testing {

/// One step of update 0 at learning rate 0 on `x` (rows of `Spec::inputs`) and the labels `y`:
/// every call draws the same random numbers (Dropout, the augmentation layers) from `seed`, so
/// the loss is a function of the weights alone. The executor is prepared once.
template <class Spec>
class StepLoss {
 public:
  StepLoss(std::vector<float> x, std::vector<std::int32_t> y, std::uint64_t seed = 0)
      : x_(std::move(x)), y_(std::move(y)) {
    executor_.set_seed(seed);
    executor_.prepare(y_.size(), 0);
  }

  /// The mean loss at weights `w`; the gradients into `gradients` where given.
  double operator()(std::span<const float> w, std::vector<float>* gradients = nullptr) {
    executor_.set_parameters(w);
    std::int64_t iterations = 0;
    NoLossScale scale;
    (void)executor_.take_totals();
    train::training_step(executor_, x_.data(), y_.data(), y_.size(), SGD{{.learning_rate = 0.0}},
                         iterations, scale);
    if (gradients) {
      gradients->resize(Spec::parameter_count);
      executor_.get_gradients(*gradients);
    }
    return executor_.take_totals().loss_sum / static_cast<double>(y_.size());
  }

  /// dL/dw_j by a central difference of step `h`; `w` is left as it was.
  double central_difference(std::vector<float>& w, std::size_t j, float h) {
    const float keep = w[j];
    w[j] = keep + h;
    const double up = (*this)(w);
    w[j] = keep - h;
    const double down = (*this)(w);
    w[j] = keep;
    return (up - down) / (2.0 * static_cast<double>(h));
  }

 private:
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
  cpu_backend::Executor<Spec> executor_;
};

}  // namespace memopt::testing
