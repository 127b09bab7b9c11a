#pragma once
// DepthwiseConv2D<Kernel, Options...>: Keras's depthwise 2-D convolution over channels-last
// images, each input channel convolved with its own depth_multiplier filters,
// y = f(depthwise_conv(x, kernel) + bias).

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/window.hpp"

namespace memopt {

/// Keras's `depth_multiplier=`: the output channels each input channel gets (default 1).
template <std::size_t N>
struct DepthMultiplier {
  static_assert(N > 0, "DepthMultiplier: each input channel needs at least 1 output channel");
  static constexpr std::size_t value = N;
};

namespace detail {
template <class T>
inline constexpr bool is_depth_multiplier_v = false;
template <std::size_t N>
inline constexpr bool is_depth_multiplier_v<DepthMultiplier<N>> = true;

template <class... Options>
inline constexpr std::size_t depth_multiplier_option = [] {
  std::size_t m = 1;
  (
      [&] {
        if constexpr (is_depth_multiplier_v<Options>) m = Options::value;
      }(),
      ...);
  return m;
}();
}  // namespace detail

/// Keras's `DepthwiseConv2D(kernel_size, ...)`: each of the C input channels is convolved
/// with its own `depth_multiplier` filters of a `Kernel` window (a number, or
/// `KernelSize<kh, kw>`), giving C x depth_multiplier output channels (channel c x m' + m from
/// input channel c), no mixing across channels. Then Keras's keyword arguments as options in any
/// order, each at most once: an activation (default Linear), `Same` or `Valid` (default
/// Valid), `Strides<sh, sw>` (default 1), `DepthMultiplier<m>` (default 1). Weights as
/// Keras's: `depthwise_kernel` `[kh, kw, C, m]` (Glorot-uniform over Keras's fans: kh x kw x C
/// in, kh x kw x m out) and `bias` `[C x m]` (zeros).
///
/// ```cpp
/// using D = mo::DepthwiseConv2D<3, mo::Same, mo::DepthMultiplier<2>, mo::ReLU>;
/// static_assert(D::output_shape(mo::image_shape(8, 8, 4)) == mo::image_shape(8, 8, 8));
/// ```
template <auto Kernel, class... Options>
struct DepthwiseConv2D {
  static_assert(WindowArgument<Kernel>,
                "DepthwiseConv2D: the kernel size must be a number or KernelSize<height, width>");
  static_assert(((ActivationFunction<Options> + detail::is_padding_v<Options> +
                      detail::is_strides_v<Options> + detail::is_depth_multiplier_v<Options> ==
                  1) &&
                 ...),
                "DepthwiseConv2D: after the kernel size, each argument must be an activation "
                "(ReLU, Sigmoid, Tanh, GELU, Softmax, Linear), a padding (Same or Valid), "
                "Strides<height, width> or DepthMultiplier<m>, in any order: "
                "DepthwiseConv2D<3, Same, DepthMultiplier<2>, ReLU>");
  using options = WindowOptions<Extent2{1, 1}, Options...>;
  static_assert((std::size_t{0} + ... + ActivationFunction<Options>) <= 1 &&
                    options::paddings <= 1 && options::strides_given <= 1 &&
                    (std::size_t{0} + ... + detail::is_depth_multiplier_v<Options>) <= 1,
                "DepthwiseConv2D: each kind of option may be given once: one activation, one "
                "padding (Same or Valid), one Strides<height, width>, one DepthMultiplier<m>");
  using Act = typename detail::activation_option<Options...>::type;

  static constexpr Extent2 kernel = extent_v<Kernel>;
  static constexpr Extent2 strides = options::strides;
  static constexpr std::size_t depth_multiplier = detail::depth_multiplier_option<Options...>;
  static_assert(kernel.h > 0 && kernel.w > 0,
                "DepthwiseConv2D: the kernel size must be at least 1");
  static_assert(strides.h > 0 && strides.w > 0,
                "DepthwiseConv2D: a stride of 0 does not move the window; the stride must be at "
                "least 1");

  using layer_tag = void;
  using activation = Act;
  static constexpr Padding padding = options::padding;
  static constexpr std::string_view name = "depthwise_conv2d";
  static constexpr std::string_view class_name = "DepthwiseConv2D";
  static constexpr std::string_view op = "depthwise conv2d + bias";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{.weight_grad_reads_input = true};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "DepthwiseConv2D: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> or put DepthwiseConv2D after another image layer");
    static_assert(In.rank != 3 || padding == Padding::same ||
                      (kernel.h <= In.dims[0] && kernel.w <= In.dims[1]),
                  "DepthwiseConv2D: the kernel is larger than its input image; use a smaller "
                  "kernel, padding Same, or a larger input");
    return true;
  }
  static constexpr Shape output_shape(Shape in) {
    const std::size_t c = in.rank == 3 ? in.channels() : 0;
    if (in.rank != 3) return image_shape(0, 0, 0);
    return image_shape(window_out(in.dims[0], kernel.h, strides.h, padding),
                       window_out(in.dims[1], kernel.w, strides.w, padding), c * depth_multiplier);
  }

  static constexpr std::array<WeightDecl, 2> weights(Shape in) {
    const std::size_t c = in.rank == 3 ? in.channels() : 0;
    const std::size_t taps = kernel.h * kernel.w;
    return {WeightDecl{"depthwise_kernel",
                       {kernel.h, kernel.w, c, depth_multiplier},
                       4,
                       true,
                       Init::glorot_uniform,
                       taps * c,
                       taps * depth_multiplier},
            WeightDecl{"bias", {c * depth_multiplier}, 1, true, Init::zeros}};
  }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
