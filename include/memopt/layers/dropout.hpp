#pragma once
// Dropout<Rate>: Keras's inverted dropout, active only while training.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's `Dropout(rate)`, the rate written as a `std::ratio`: `Dropout<std::ratio<1, 2>>`.
/// In `fit` each value is dropped with probability `rate` and the kept ones are scaled by
/// 1 / (1 - rate); in `evaluate` and `predict` it is the identity. The draws come from the
/// model's seed and the step number, so a run (and a resumed run) is reproducible. Backward
/// keeps one bit per value.
///
/// ```cpp
/// using D = mo::Dropout<std::ratio<1, 2>>;
/// static_assert(D::rate == 0.5);
/// ```
template <class Rate>
struct Dropout {
  static_assert(is_ratio_v<Rate>,
                "Dropout: write the rate as a std::ratio, e.g. Dropout<std::ratio<1, 2>> for 0.5");
  static constexpr double rate = ratio_value_v<Rate>;
  static_assert(Rate::num >= 0 && Rate::num < Rate::den,
                "Dropout: the rate must be in [0, 1): it is the fraction of values dropped");

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "dropout";
  static constexpr std::string_view class_name = "Dropout";
  static constexpr std::string_view op = "dropout";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }

  /// 64-bit words of keep bits per sample.
  static constexpr std::size_t mask_words(std::size_t values) { return (values + 63) / 64; }
  static constexpr std::array<SavedDecl, 1> saved(Shape in) {
    return {SavedDecl{"mask", mask_words(in.size()) * 8, 0, Unit::byte}};
  }
};

}  // namespace memopt
