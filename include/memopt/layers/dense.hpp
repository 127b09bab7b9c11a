#pragma once
// Dense<Units, Activation>: y = f(W x + b), the layer the guide's model is made of.

#include <cstddef>
#include <string_view>

#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// A fully connected layer of `Units` outputs followed by `Act`.
///
/// ```cpp
/// using Hidden = mo::Dense<128, mo::ReLU>;
/// static_assert(Hidden::parameters(784) == 784 * 128 + 128);
/// ```
template <std::size_t Units, class Act = Linear>
struct Dense {
  static_assert(Units > 0, "Dense: Units must be at least 1 (write e.g. Dense<128, ReLU>)");
  static_assert(Activation<Act>,
                "Dense: the second argument must be an activation: Linear, ReLU, Sigmoid, "
                "Tanh, GELU or Softmax");

  using layer_tag = void;
  using activation = Act;
  static constexpr std::size_t units = Units;
  static constexpr std::string_view name = "dense";

  /// Kernel (inputs x units) plus bias (units).
  static constexpr std::size_t parameters(std::size_t inputs) { return inputs * Units + Units; }
};

}  // namespace memopt
