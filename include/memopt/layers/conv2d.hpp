#pragma once
// Conv2D<Filters, Kernel, Options...>: Keras's 2-D convolution over channels-last images,
// y = f(conv(x, kernel) + bias).

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/window.hpp"

namespace memopt {

namespace detail {
// The activation among a layer's options, Linear if none.
template <class... Options>
struct activation_option {
  using type = Linear;
};
template <class O, class... Options>
struct activation_option<O, Options...> {
  using type =
      std::conditional_t<ActivationFunction<O>, O, typename activation_option<Options...>::type>;
};
}  // namespace detail

/// A convolution of `Filters` output channels with a `Kernel` window (a number for a square
/// one, or `KernelSize<kh, kw>`), then Keras's keyword arguments as options in any order, each
/// at most once: an activation (`activation=`, default Linear), `Same` or `Valid`
/// (`padding=`, default Valid) and `Strides<sh, sw>` (`strides=`, default 1). Weights as
/// Keras's: `kernel` `[kh, kw, in_channels, filters]` (Glorot-uniform), `bias` `[filters]`
/// (zeros).
///
/// ```cpp
/// using C = mo::Conv2D<32, 3, mo::ReLU>;
/// static_assert(C::output_shape(mo::image_shape(28, 28, 1)) == mo::image_shape(26, 26, 32));
/// static_assert(std::is_same_v<mo::Conv2D<8, 3, mo::Same, mo::ReLU>::activation, mo::ReLU>);
/// ```
template <std::size_t Filters, auto Kernel, class... Options>
struct Conv2D {
  static_assert(Filters > 0, "Conv2D: Filters must be at least 1 (write e.g. Conv2D<32, 3>)");
  static_assert(WindowArgument<Kernel>,
                "Conv2D: the kernel size must be a number or KernelSize<height, width>");
  static_assert(((ActivationFunction<Options> + detail::is_padding_v<Options> +
                      detail::is_strides_v<Options> ==
                  1) &&
                 ...),
                "Conv2D: after the filters and the kernel size, each argument must be an "
                "activation (ReLU, Sigmoid, Tanh, GELU, Softmax, Linear), a padding (Same or "
                "Valid) or Strides<height, width>, in any order: Conv2D<16, 3, Strides<2>, "
                "Same, ReLU>");
  using options = WindowOptions<Extent2{1, 1}, Options...>;
  static_assert((std::size_t{0} + ... + ActivationFunction<Options>) <= 1 &&
                    options::paddings <= 1 && options::strides_given <= 1,
                "Conv2D: each kind of option may be given once: one activation, one padding "
                "(Same or Valid), one Strides<height, width>");
  using Act = typename detail::activation_option<Options...>::type;
  static constexpr Padding Pad = options::padding;

  static constexpr Extent2 kernel = extent_v<Kernel>;
  static constexpr Extent2 strides = options::strides;
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
        "padding Same, or a larger input");
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
