#pragma once
// What Keras's geometric augmentation layers (RandomTranslation, RandomZoom, RandomRotation)
// share: their options (fill mode, interpolation), the affine map from an output pixel to the
// point of the input it samples, and how an image's factors are drawn from its stream.

#include <array>
#include <cstddef>
#include <cstdint>
#include <ratio>
#include <string_view>
#include <type_traits>

#include "memopt/core/random.hpp"
#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/random_factor.hpp"
#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's `fill_mode`: what a point outside the input reads.
enum class FillMode { reflect, wrap, constant, nearest };
/// Keras's `interpolation` of an augmentation layer.
enum class Sampling { bilinear, nearest };

/// `fill_mode="reflect"` (the default): `d c b a | a b c d | d c b a`, the input reflected
/// about the edge of its last pixel.
struct Reflect {
  static constexpr FillMode fill_mode = FillMode::reflect;
};
/// `fill_mode="wrap"`: `a b c d | a b c d | a b c d`.
struct Wrap {
  static constexpr FillMode fill_mode = FillMode::wrap;
};
/// `fill_mode="constant"` with `fill_value=Value` (a std::ratio, 0 by default):
/// `k k k k | a b c d | k k k k`.
template <class Value = std::ratio<0>>
struct Constant {
  static_assert(is_ratio_v<Value>,
                "Constant: write the fill value as a std::ratio, e.g. Constant<std::ratio<1, 2>>");
  static constexpr FillMode fill_mode = FillMode::constant;
  static constexpr double fill_value = ratio_value_v<Value>;
};
/// `fill_mode="nearest"`: `a a a a | a b c d | d d d d`.
struct Nearest {
  static constexpr FillMode fill_mode = FillMode::nearest;
};
/// `interpolation="bilinear"` (the default): the four pixels around the point, weighted.
struct Bilinear {
  static constexpr Sampling sampling = Sampling::bilinear;
};
/// `interpolation="nearest"`: the pixel nearest the point (halves round to even, as Keras's
/// JAX backend rounds).
struct NearestNeighbor {
  static constexpr Sampling sampling = Sampling::nearest;
};

namespace detail {
template <class O>
inline constexpr bool is_fill_mode_v =
    std::is_same_v<O, Reflect> || std::is_same_v<O, Wrap> || std::is_same_v<O, Nearest>;
template <class V>
inline constexpr bool is_fill_mode_v<Constant<V>> = true;
template <class O>
inline constexpr bool is_sampling_v =
    std::is_same_v<O, Bilinear> || std::is_same_v<O, NearestNeighbor>;
}  // namespace detail

/// The options of an augmentation layer after its factors, in any order, each kind at most
/// once, told apart by their kind: a fill mode and an interpolation.
template <class... Options>
struct AffineOptions {
  static constexpr bool all_known =
      ((detail::is_fill_mode_v<Options> || detail::is_sampling_v<Options>)&&...);
  static constexpr std::size_t fill_modes =
      (std::size_t{0} + ... + detail::is_fill_mode_v<Options>);
  static constexpr std::size_t samplings = (std::size_t{0} + ... + detail::is_sampling_v<Options>);
  static constexpr FillMode fill_mode = [] {
    FillMode f = FillMode::reflect;
    (
        [&] {
          if constexpr (detail::is_fill_mode_v<Options>) f = Options::fill_mode;
        }(),
        ...);
    return f;
  }();
  static constexpr double fill_value = [] {
    double v = 0.0;
    (
        [&] {
          if constexpr (detail::is_fill_mode_v<Options> && requires { Options::fill_value; })
            v = Options::fill_value;
        }(),
        ...);
    return v;
  }();
  static constexpr Sampling sampling = [] {
    Sampling s = Sampling::bilinear;
    (
        [&] {
          if constexpr (detail::is_sampling_v<Options>) s = Options::sampling;
        }(),
        ...);
    return s;
  }();
};

/// Where output pixel (x, y) samples the input, x across and y down, in pixels: Keras's
/// `affine_transform` matrix without its projective terms.
///   x_in = xx * x + xy * y + x0,   y_in = yx * x + yy * y + y0
struct AffineMap {
  double xx = 1, xy = 0, x0 = 0;
  double yx = 0, yy = 1, y0 = 0;
};

/// A draw uniform in [lo, hi) from 53 random bits; exactly `lo` where lo == hi.
inline double uniform_factor(Rng& rng, double lo, double hi) {
  const double u = static_cast<double>(rng.next() >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

/// One image's factors for augmentation layer `L`: `L::draws` values, the k-th uniform in
/// [L::lower[k], L::upper[k]).
template <class L>
std::array<double, L::draws> draw_factors(Rng& rng) {
  std::array<double, L::draws> f{};
  for (std::size_t k = 0; k < L::draws; ++k) f[k] = uniform_factor(rng, L::lower[k], L::upper[k]);
  return f;
}

namespace detail {
/// What the three geometric augmentation layers have in common: no weights, nothing saved (the
/// input gradient redraws the transforms), the input's shape out, active in fit only.
template <class... Options>
struct AffineAugmentation {
  using options = AffineOptions<Options...>;
  static constexpr FillMode fill_mode = options::fill_mode;
  static constexpr double fill_value = options::fill_value;
  static constexpr Sampling sampling = options::sampling;

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view op = "affine resample";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};  // dx = S^T dy: the transform is redrawn

  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};
}  // namespace detail

}  // namespace memopt
