#pragma once
// Shape: the shape of one sample, rank 1 (features) or rank 3 (height, width, channels,
// Keras's channels-last). A structural type, so a shape can be a template argument.

#include <array>
#include <cstddef>

namespace memopt {

/// The shape of one sample: `Shape{1, {784}}` or `Shape{3, {28, 28, 1}}`.
///
/// ```cpp
/// constexpr mo::Shape s = mo::image_shape(28, 28, 1);
/// static_assert(s.size() == 784 && s.channels() == 1);
/// ```
struct Shape {
  std::size_t rank = 1;
  std::array<std::size_t, 3> dims{};

  /// Values per sample.
  constexpr std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  constexpr std::size_t height() const { return dims[0]; }
  constexpr std::size_t width() const { return dims[1]; }
  /// The last axis: channels of an image, features of a vector.
  constexpr std::size_t channels() const { return dims[rank - 1]; }
  constexpr bool is_image() const { return rank == 3; }

  friend constexpr bool operator==(const Shape&, const Shape&) = default;
};

/// A rank-1 shape of `n` features.
constexpr Shape vector_shape(std::size_t n) {
  return Shape{1, {n, 0, 0}};
}
/// A rank-3 shape: height, width, channels.
constexpr Shape image_shape(std::size_t h, std::size_t w, std::size_t c) {
  return Shape{3, {h, w, c}};
}

}  // namespace memopt
