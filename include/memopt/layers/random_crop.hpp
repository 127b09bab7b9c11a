#pragma once
// RandomCrop<Height, Width>: Keras's random crop of images to a fixed size, random in fit and
// centred in evaluate, predict and ONNX exports.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/random.hpp"
#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// Whether a `crop_height` x `crop_width` window fits in an `input_height` x `input_width`
/// image (a function, so that clang's diagnostic shows all four sizes).
constexpr bool crop_within_input(std::size_t input_height, std::size_t input_width,
                                 std::size_t crop_height, std::size_t crop_width) {
  return crop_height <= input_height && crop_width <= input_width;
}

/// Instantiated when a crop does not fit its input: the diagnostic names both sizes.
template <std::size_t InputHeight, std::size_t InputWidth, std::size_t CropHeight,
          std::size_t CropWidth>
struct RandomCropWithinInput {
  static_assert(crop_within_input(InputHeight, InputWidth, CropHeight, CropWidth),
                "RandomCrop: the crop is larger than its input image; RandomCropWithinInput<input "
                "height, input width, crop height, crop width> names both sizes. Keras would "
                "resize the image up to the crop; memopt's shapes are fixed: crop at most the "
                "input's size, or resize the images as they are read");
  static constexpr bool value = true;
};

/// Keras's `RandomCrop(height, width)`: the output is a `Height` x `Width` window of each
/// image, every channel. In `fit`, where the input is larger than the crop on both axes, one
/// window per batch (Keras crops a batch at one place) at a random offset, the top uniform in
/// [0, input height - Height] and then the left in [0, input width - Width]; the draws come
/// from the model's seed, the step and the layer's place, so a resumed run draws the same.
/// Otherwise (an axis as large as the crop), and in `evaluate` and `predict`, Keras's centred
/// crop: the largest window centred in the image with the crop's aspect ratio, resized
/// bilinearly (half-pixel centres, no antialiasing) to `Height` x `Width` where it is larger.
/// No weights; backward puts the output's gradient in its window, zero elsewhere, and keeps
/// nothing (the window is redrawn). An input smaller than the crop does not compile.
///
/// ```cpp
/// using Net = mo::Sequential<mo::RandomCrop<24, 24>, mo::Rescaling<std::ratio<1, 255>>,
///                            mo::Conv2D<8, 3, mo::ReLU>, mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// static_assert(mo::RandomCrop<24, 20>::output_shape(mo::image_shape(32, 32, 3)) ==
///               mo::image_shape(24, 20, 3));
/// static_assert(mo::RandomCrop<24, 24>::centred_window(32, 40).left == 4);  // 32 x 32 at 4
/// ```
template <std::size_t Height, std::size_t Width>
struct RandomCrop {
  static_assert(Height > 0 && Width > 0, "RandomCrop: the height and width must be positive");
  static constexpr std::size_t height = Height, width = Width;

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "random_crop";
  static constexpr std::string_view class_name = "RandomCrop";
  static constexpr std::string_view op = "random crop";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};  // dx is dy in the redrawn window

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomCrop: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> and put RandomCrop before Flatten");
    if constexpr (In.rank == 3)
      static_assert(RandomCropWithinInput<In.dims[0], In.dims[1], Height, Width>::value);
    return true;
  }
  static constexpr Shape output_shape(Shape in) {
    // Not an image: accepts() says so, and the layers after see the input unchanged.
    return in.rank == 3 ? image_shape(Height, Width, in.dims[2]) : in;
  }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }

  /// The part of an input image a crop reads: `height` x `width` pixels from (top, left).
  struct Window {
    std::size_t top = 0, left = 0, height = 0, width = 0;
    constexpr bool operator==(const Window&) const = default;
  };

  /// Whether `fit` draws the window: Keras's `input_height > height and input_width > width`.
  static constexpr bool random_in_training(std::size_t in_height, std::size_t in_width) {
    return in_height > Height && in_width > Width;
  }

  /// Keras's centred crop of an `in_height` x `in_width` image: the largest window of the
  /// crop's aspect ratio, centred (offsets rounded down), as Keras's get_random_transformation
  /// computes it outside training (its float divisions truncated, as integer ones are here).
  static constexpr Window centred_window(std::size_t in_height, std::size_t in_width) {
    const auto clamp = [](std::size_t v, std::size_t hi) { return v < 1 ? 1 : (v > hi ? hi : v); };
    const std::size_t h = clamp(in_width * Height / Width, in_height);
    const std::size_t w = clamp(in_height * Width / Height, in_width);
    return Window{(in_height - h) / 2, (in_width - w) / 2, h, w};
  }

  /// `fit`'s window for one batch, drawn from `rng` where the input is larger on both axes:
  /// the top, then the left, each uniform over every offset that keeps the window inside.
  static constexpr Window training_window(Rng& rng, std::size_t in_height, std::size_t in_width) {
    if (!random_in_training(in_height, in_width)) return centred_window(in_height, in_width);
    const std::size_t top = static_cast<std::size_t>(rng.below(in_height - Height + 1));
    const std::size_t left = static_cast<std::size_t>(rng.below(in_width - Width + 1));
    return Window{top, left, Height, Width};
  }
};

}  // namespace memopt
