#pragma once
// Input<N>: the width of one sample, which binds every layer's shape.

#include <cstddef>

namespace memopt {

/// A sample of `Features` floats: `Model<Net, Input<784>>` for 28x28 images.
template <std::size_t Features>
struct Input {
  static_assert(Features > 0, "Input: a sample needs at least one feature (write Input<784>)");
  static constexpr std::size_t features = Features;
};

template <class T>
inline constexpr bool is_input_v = false;
template <std::size_t N>
inline constexpr bool is_input_v<Input<N>> = true;

}  // namespace memopt
