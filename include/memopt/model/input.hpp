#pragma once
// Input<N> or Input<H, W, C>: the shape of one sample, which binds every layer's shape.

#include <cstddef>

#include "memopt/core/shape.hpp"

namespace memopt {

/// A sample of `Dims...`: `Input<784>` for a vector of 784 features, `Input<28, 28, 1>` for a
/// 28x28 image of one channel (height, width, channels: Keras's channels-last).
///
/// ```cpp
/// static_assert(mo::Input<28, 28, 1>::features == 784);
/// ```
template <std::size_t... Dims>
struct Input {
  static_assert(sizeof...(Dims) == 1 || sizeof...(Dims) == 3,
                "Input: write Input<N> for a vector or Input<height, width, channels> for an "
                "image");
  static_assert(((Dims > 0) && ...),
                "Input: a sample needs at least one feature (write Input<784> or "
                "Input<28, 28, 1>)");
  static constexpr Shape shape = [] {
    if constexpr (sizeof...(Dims) == 1)
      return vector_shape(Dims...);
    else
      return image_shape(Dims...);
  }();
  /// Values per sample.
  static constexpr std::size_t features = shape.size();
};

template <class T>
inline constexpr bool is_input_v = false;
template <std::size_t... Ds>
inline constexpr bool is_input_v<Input<Ds...>> = true;

}  // namespace memopt
