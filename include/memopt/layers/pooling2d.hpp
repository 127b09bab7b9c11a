#pragma once
// MaxPooling2D and AveragePooling2D: Keras's 2-D pooling windows over channels-last images.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/window.hpp"

namespace memopt {

/// Which pooling a pooling layer computes.
enum class PoolingKind { max, average };

namespace detail {

// What the two pooling layers share: shapes, checks and (no) weights.
// Each check is stated once per kind so that the diagnostic names the layer the user wrote.
template <PoolingKind Kind, auto Pool, class... Options>
struct Pooling2D {
  static constexpr bool is_max = Kind == PoolingKind::max;
  static_assert(!is_max || WindowArgument<Pool>,
                "MaxPooling2D: the pool size must be a number or KernelSize<height, width>");
  static_assert(is_max || WindowArgument<Pool>,
                "AveragePooling2D: the pool size must be a number or KernelSize<height, width>");
  static constexpr bool options_known =
      ((detail::is_padding_v<Options> || detail::is_strides_v<Options>)&&...);
  static_assert(!is_max || options_known,
                "MaxPooling2D: after the pool size, each argument must be a padding (Same or "
                "Valid) or Strides<height, width>, in any order: MaxPooling2D<3, Strides<2>, "
                "Same>");
  static_assert(is_max || options_known,
                "AveragePooling2D: after the pool size, each argument must be a padding (Same "
                "or Valid) or Strides<height, width>, in any order: AveragePooling2D<3, "
                "Strides<2>, Same>");
  static constexpr Extent2 pool = extent_v<Pool>;
  using options = WindowOptions<pool, Options...>;
  static_assert(!is_max || (options::paddings <= 1 && options::strides_given <= 1),
                "MaxPooling2D: each kind of option may be given once: one padding (Same or "
                "Valid), one Strides<height, width>");
  static_assert(is_max || (options::paddings <= 1 && options::strides_given <= 1),
                "AveragePooling2D: each kind of option may be given once: one padding (Same or "
                "Valid), one Strides<height, width>");
  static constexpr Padding Pad = options::padding;
  static constexpr Extent2 strides = options::strides;
  static_assert(!is_max || (pool.h > 0 && pool.w > 0),
                "MaxPooling2D: the pool size must be at least 1 (write e.g. MaxPooling2D<2>)");
  static_assert(is_max || (pool.h > 0 && pool.w > 0),
                "AveragePooling2D: the pool size must be at least 1 (write e.g. "
                "AveragePooling2D<2>)");
  static_assert(!is_max || (strides.h > 0 && strides.w > 0),
                "MaxPooling2D: a stride of 0 does not move the window; the stride must be at "
                "least 1 (leave it out to stride by the pool size)");
  static_assert(is_max || (strides.h > 0 && strides.w > 0),
                "AveragePooling2D: a stride of 0 does not move the window; the stride must be "
                "at least 1 (leave it out to stride by the pool size)");

  using layer_tag = void;
  using activation = Linear;
  static constexpr PoolingKind kind = Kind;
  static constexpr Padding padding = Pad;
  static constexpr bool is_view = false;

  template <Shape In>
  static consteval bool accepts() {
    static_assert(!is_max || In.rank == 3,
                  "MaxPooling2D: its input must be an image (height, width, channels); pool "
                  "before Flatten, not after");
    static_assert(is_max || In.rank == 3,
                  "AveragePooling2D: its input must be an image (height, width, channels); "
                  "pool before Flatten, not after");
    constexpr bool fits =
        In.rank != 3 || Pad == Padding::same || (pool.h <= In.dims[0] && pool.w <= In.dims[1]);
    static_assert(!is_max || fits,
                  "MaxPooling2D: the pool is larger than its input image; use a smaller pool, "
                  "padding Same, or a larger input");
    static_assert(is_max || fits,
                  "AveragePooling2D: the pool is larger than its input image; use a smaller "
                  "pool, padding Same, or a larger input");
    return true;
  }
  static constexpr Shape output_shape(Shape in) {
    if (in.rank != 3) return image_shape(0, 0, 0);
    return image_shape(window_out(in.dims[0], pool.h, strides.h, Pad),
                       window_out(in.dims[1], pool.w, strides.w, Pad), in.channels());
  }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
};

}  // namespace detail

/// Keras's `MaxPooling2D(pool_size, strides=pool_size, padding)`, the options after the pool
/// size in any order: `MaxPooling2D<3, Strides<2>, Same>`. Backward routes each
/// gradient to its window's maximum, whose position (one byte per output value) is what the
/// layer keeps from its forward pass.
///
/// ```cpp
/// using P = mo::MaxPooling2D<2>;
/// static_assert(P::output_shape(mo::image_shape(26, 26, 32)) == mo::image_shape(13, 13, 32));
/// ```
template <auto Pool, class... Options>
struct MaxPooling2D : detail::Pooling2D<PoolingKind::max, Pool, Options...> {
  using base = detail::Pooling2D<PoolingKind::max, Pool, Options...>;
  static_assert(base::pool.h * base::pool.w <= 255,
                "MaxPooling2D: a pool of more than 255 values is not supported (its argmax is "
                "kept in one byte)");
  static constexpr std::string_view name = "max_pooling2d";
  static constexpr std::string_view class_name = "MaxPooling2D";
  static constexpr std::string_view op = "max pool";
  /// Whether the windows tile the input (valid padding, stride = pool: Keras's default).
  static constexpr bool tiles = base::Pad == Padding::valid && base::strides.h == base::pool.h &&
                                base::strides.w == base::pool.w;
  /// Over tiling windows the argmax also records "no gradient" where a window's maximum is not
  /// positive: below a ReLU, exactly the windows whose argmax input has ReLU's derivative 0
  /// (relu(z) > 0 exactly where z > 0), so the layer below keeps no ReLU mask.
  static constexpr BackwardReads backward_reads{.input_grad_carries_relu_below = tiles};

  /// The argmax within each window, a byte per output value.
  static constexpr std::array<SavedDecl, 1> saved(Shape in) {
    return {SavedDecl{"argmax", base::output_shape(in).size(), 0, Unit::byte}};
  }
};

/// Keras's `AveragePooling2D(pool_size, strides=pool_size, padding)`: with `same`, a window
/// at the border averages the input pixels it covers only, as TensorFlow does.
template <auto Pool, class... Options>
struct AveragePooling2D : detail::Pooling2D<PoolingKind::average, Pool, Options...> {
  static constexpr std::string_view name = "average_pooling2d";
  static constexpr std::string_view class_name = "AveragePooling2D";
  static constexpr std::string_view op = "average pool";
  static constexpr BackwardReads backward_reads{};
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
