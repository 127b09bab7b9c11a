#pragma once
// Conv2D<Filters, Kernel, Stride, Padding, Activation>: Keras's 2-D convolution over
// channels-last images, y = f(conv(x, kernel) + bias).

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/window.hpp"

namespace memopt {

/// A convolution of `Filters` output channels with a `Kernel` window (a number for a square
/// one, or `KernelSize<kh, kw>`), moved by `Stride` (a number or `Strides<sh, sw>`), with
/// Keras's `valid` or `same` padding, followed by `Act`. Weights as Keras's: `kernel`
/// `[kh, kw, in_channels, filters]` (Glorot-uniform), `bias` `[filters]` (zeros).
///
/// ```cpp
/// using C = mo::Conv2D<32, 3, 1, mo::valid, mo::ReLU>;
/// static_assert(C::output_shape(mo::image_shape(28, 28, 1)) == mo::image_shape(26, 26, 32));
/// ```
template <std::size_t Filters, auto Kernel, auto Stride = 1, Padding Pad = valid,
          class Act = Linear>
struct Conv2D {
  static_assert(Filters > 0, "Conv2D: Filters must be at least 1 (write e.g. Conv2D<32, 3>)");
  static_assert(WindowArgument<Kernel>,
                "Conv2D: the kernel size must be a number or KernelSize<height, width>");
  static_assert(WindowArgument<Stride>,
                "Conv2D: the stride must be a number or Strides<height, width>");
  static_assert(ActivationFunction<Act>,
                "Conv2D: the last argument must be an activation: Linear, ReLU, Sigmoid, Tanh "
                "or GELU");

  static constexpr Extent2 kernel = extent_v<Kernel>;
  static constexpr Extent2 strides = extent_v<Stride>;
  static_assert(kernel.h > 0 && kernel.w > 0, "Conv2D: the kernel size must be at least 1");
  static_assert(strides.h > 0 && strides.w > 0,
                "Conv2D: a stride of 0 does not move the window; the stride must be at least 1");

  using layer_tag = void;
  using activation = Act;
  static constexpr std::size_t filters = Filters;
  static constexpr Padding padding = Pad;
  static constexpr std::string_view name = "conv2d";
  static constexpr std::string_view class_name = "Conv2D";
  static constexpr std::string_view op = "conv2d + bias";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{.weight_grad_reads_input = true};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "Conv2D: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> or put Conv2D after another image layer");
    static_assert(
        In.rank != 3 || Pad == Padding::same || (kernel.h <= In.dims[0] && kernel.w <= In.dims[1]),
        "Conv2D: the kernel is larger than its input image; use a smaller kernel, "
        "padding `same`, or a larger input");
    return true;
  }
  static constexpr Shape output_shape(Shape in) {
    if (in.rank != 3) return image_shape(0, 0, Filters);
    return image_shape(window_out(in.dims[0], kernel.h, strides.h, Pad),
                       window_out(in.dims[1], kernel.w, strides.w, Pad), Filters);
  }

  static constexpr std::array<WeightDecl, 2> weights(Shape in) {
    const std::size_t c = in.rank == 3 ? in.channels() : 0;
    const std::size_t taps = kernel.h * kernel.w;
    return {WeightDecl{"kernel",
                       {kernel.h, kernel.w, c, Filters},
                       4,
                       true,
                       Init::glorot_uniform,
                       taps * c,
                       taps * Filters},
            WeightDecl{"bias", {Filters}, 1, true, Init::zeros}};
  }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
