#pragma once
// SeparableConv2D<Filters, Kernel, Options...>: Keras's depthwise-separable 2-D convolution, a
// depthwise convolution then a pointwise (1x1) one, y = f(pointwise(depthwise(x)) + bias).

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/depthwise_conv2d.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/window.hpp"

namespace memopt {

/// Keras's `SeparableConv2D(filters, kernel_size, ...)`: each of the C input channels is
/// convolved with its own `depth_multiplier` filters of a `Kernel` window (strides and padding
/// apply here), then a 1x1 convolution mixes the C x m channels into `Filters`, adds the bias
/// and applies the activation. Options as DepthwiseConv2D's, in any order, each at most once:
/// an activation, `Same`/`Valid`, `Strides<sh, sw>`, `DepthMultiplier<m>`. Weights as
/// Keras's: `depthwise_kernel` `[kh, kw, C, m]`, `pointwise_kernel` `[1, 1, C x m, Filters]`
/// (both Glorot-uniform over Keras's fans), `bias` `[Filters]` (zeros). Backward keeps the
/// depthwise output (C x m channels per pixel) for the pointwise kernel's gradient.
///
/// ```cpp
/// using S = mo::SeparableConv2D<32, 3, mo::Same, mo::ReLU>;
/// static_assert(S::output_shape(mo::image_shape(16, 16, 8)) == mo::image_shape(16, 16, 32));
/// ```
template <std::size_t Filters, auto Kernel, class... Options>
struct SeparableConv2D {
  static_assert(Filters > 0,
                "SeparableConv2D: Filters must be at least 1 (write e.g. SeparableConv2D<32, 3>)");
  static_assert(WindowArgument<Kernel>,
                "SeparableConv2D: the kernel size must be a number or KernelSize<height, width>");
  static_assert(((ActivationFunction<Options> + detail::is_padding_v<Options> +
                      detail::is_strides_v<Options> + detail::is_depth_multiplier_v<Options> ==
                  1) &&
                 ...),
                "SeparableConv2D: after the filters and the kernel size, each argument must be "
                "an activation (ReLU, Sigmoid, Tanh, GELU, Softmax, Linear), a padding (Same or "
                "Valid), Strides<height, width> or DepthMultiplier<m>, in any order: "
                "SeparableConv2D<64, 3, Same, ReLU>");
  using options = WindowOptions<Extent2{1, 1}, Options...>;
  static_assert((std::size_t{0} + ... + ActivationFunction<Options>) <= 1 &&
                    options::paddings <= 1 && options::strides_given <= 1 &&
                    (std::size_t{0} + ... + detail::is_depth_multiplier_v<Options>) <= 1,
                "SeparableConv2D: each kind of option may be given once: one activation, one "
                "padding (Same or Valid), one Strides<height, width>, one DepthMultiplier<m>");
  using Act = typename detail::activation_option<Options...>::type;

  static constexpr Extent2 kernel = extent_v<Kernel>;
  static constexpr Extent2 strides = options::strides;
  static constexpr std::size_t depth_multiplier = detail::depth_multiplier_option<Options...>;
  static constexpr std::size_t filters = Filters;
  static_assert(kernel.h > 0 && kernel.w > 0,
                "SeparableConv2D: the kernel size must be at least 1");
  static_assert(strides.h > 0 && strides.w > 0,
                "SeparableConv2D: a stride of 0 does not move the window; the stride must be at "
                "least 1");

  using layer_tag = void;
  using activation = Act;
  static constexpr Padding padding = options::padding;
  static constexpr std::string_view name = "separable_conv2d";
  static constexpr std::string_view class_name = "SeparableConv2D";
  static constexpr std::string_view op = "depthwise conv2d + pointwise conv2d + bias";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{.weight_grad_reads_input = true};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "SeparableConv2D: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> or put SeparableConv2D after another image layer");
    static_assert(In.rank != 3 || padding == Padding::same ||
                      (kernel.h <= In.dims[0] && kernel.w <= In.dims[1]),
                  "SeparableConv2D: the kernel is larger than its input image; use a smaller "
                  "kernel, padding Same, or a larger input");
    return true;
  }
  /// The depthwise half's output: the pointwise kernel's input.
  static constexpr Shape middle_shape(Shape in) {
    if (in.rank != 3) return image_shape(0, 0, 0);
    return image_shape(window_out(in.dims[0], kernel.h, strides.h, padding),
                       window_out(in.dims[1], kernel.w, strides.w, padding),
                       in.channels() * depth_multiplier);
  }
  static constexpr Shape output_shape(Shape in) {
    if (in.rank != 3) return image_shape(0, 0, Filters);
    const Shape mid = middle_shape(in);
    return image_shape(mid.dims[0], mid.dims[1], Filters);
  }

  static constexpr std::array<WeightDecl, 3> weights(Shape in) {
    const std::size_t c = in.rank == 3 ? in.channels() : 0;
    const std::size_t taps = kernel.h * kernel.w, mid = c * depth_multiplier;
    return {
        WeightDecl{"depthwise_kernel",
                   {kernel.h, kernel.w, c, depth_multiplier},
                   4,
                   true,
                   Init::glorot_uniform,
                   taps * c,
                   taps * depth_multiplier},
        WeightDecl{
            "pointwise_kernel", {1, 1, mid, Filters}, 4, true, Init::glorot_uniform, mid, Filters},
        WeightDecl{"bias", {Filters}, 1, true, Init::zeros}};
  }
  static constexpr std::array<SavedDecl, 1> saved(Shape in) {
    return {SavedDecl{"depthwise_output", in.rank == 3 ? middle_shape(in).size() : 0, 0,
                      Unit::compute}};
  }
};

}  // namespace memopt
