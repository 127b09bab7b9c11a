#pragma once
// io::image::resize_into: resampling through stb_image_resize (v0.97, Debian's libstb-dev
// header), and Keras's centre crop to an aspect ratio.

// The C headers stb's implementation includes, first and at global scope, so that its own
// #includes inside the namespace below are no-ops.
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"
#include "memopt/io/image/image.hpp"

// stb_image_resize compiled here, in a namespace of memopt's own, rather than linked from
// Debian's libstb.so: that build keeps stb's debug assertions, and one of them
// (`total < 1.1f` in stbir__normalize_downsample_coefficients, a sanity check on filter
// weights that stb renormalises right after) aborts the program for some valid reductions,
// e.g. 192 x 144 to 120 x 100 with the triangle filter. Its functions are made inline, so
// that every translation unit may include this header. A user's own include of the header,
// before or after this one, is unaffected.
// stb_image_resize comes with the CMake target memopt::images, not with memopt::memopt:
// name the target before the compiler's "No such file".
#if !__has_include(<stb_image_resize.h>)
#error \
    "memopt: the image headers need stb_image_resize.h (stb_image_resize), which comes with the memopt::images CMake target: target_link_libraries(app PRIVATE memopt::images)"
#endif
#pragma push_macro("STBIR_INCLUDE_STB_IMAGE_RESIZE_H")
#pragma push_macro("STBIRDEF")
#undef STBIR_INCLUDE_STB_IMAGE_RESIZE_H
#undef STBIRDEF
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#define STBIRDEF inline
#define STBIR_ASSERT(x) ((void)0)
namespace memopt::io::image::detail::stb {
#include <stb_image_resize.h>
}  // namespace memopt::io::image::detail::stb
#undef STB_IMAGE_RESIZE_IMPLEMENTATION
#undef STBIRDEF
#undef STBIR_ASSERT
#pragma pop_macro("STBIRDEF")
#pragma pop_macro("STBIR_INCLUDE_STB_IMAGE_RESIZE_H")

namespace memopt::io::image {

/// How `resize_into` resamples. Each filter widens with the scale when shrinking, so
/// downscaling averages (anti-aliases) as Pillow's `resize` and torchvision's
/// `antialias=True` do; TensorFlow's `tf.image.resize` (what Keras uses) does not unless
/// asked, so a large reduction differs from Keras's by that aliasing.
///
/// - `bilinear`: the triangle filter; upscaling is bilinear interpolation (Pillow BILINEAR).
/// - `area`: the box filter, an average over each output pixel's area when shrinking (TF
///   `area`, Pillow BOX).
/// - `bicubic`: Catmull-Rom (Pillow BICUBIC's a = -0.5).
///
/// ```cpp
/// std::vector<std::uint8_t> out(128 * 128 * img.channels);
/// mo::io::image::resize_into(img, out, 128, 128, mo::io::image::Interpolation::area);
/// ```
enum class Interpolation : std::uint8_t { bilinear, area, bicubic };

/// Keras's name of `interpolation`.
constexpr std::string_view name_of(Interpolation interpolation) noexcept {
  switch (interpolation) {
    case Interpolation::area:
      return "area";
    case Interpolation::bicubic:
      return "bicubic";
    default:
      return "bilinear";
  }
}

/// A rectangle of an image in source pixels: rows [top, top + height), columns
/// [left, left + width).
struct CropBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

/// The largest centred crop of a `height` x `width` image with the aspect ratio of
/// `target_height` x `target_width`, computed exactly as Keras's `smart_resize` (integer
/// sizes rounded down, at least 1; the offset rounded down).
///
/// ```cpp
/// auto box = mo::io::image::aspect_crop(340, 500, 200, 200);  // {0, 80, 340, 340}
/// ```
constexpr CropBox aspect_crop(int height, int width, int target_height, int target_width) noexcept {
  const long long h = height, w = width, th = target_height, tw = target_width;
  const int crop_h = static_cast<int>(std::max(1LL, std::min(h, w * th / tw)));
  const int crop_w = static_cast<int>(std::max(1LL, std::min(w, h * tw / th)));
  return CropBox{(height - crop_h) / 2, (width - crop_w) / 2, crop_h, crop_w};
}

/// Resamples the region `box` of `src` (the whole image when `box` is empty; in pixels of an
/// image of `box_of_height` x `box_of_width`, which may differ from `src`'s size when `src` was
/// decoded at a reduced scale: the box is then scaled with it) to `height` x `width` pixels
/// with `src.channels` channels, written row-major into `dst`. Pixel values are resampled as
/// they are (no sRGB linearisation), with edges clamped. An image already of the target size
/// with no crop is copied.
///
/// ```cpp
/// std::vector<std::uint8_t> out(128 * 128 * img.channels);
/// mo::io::image::resize_into(img, out, 128, 128);
/// ```
inline void resize_into(const Image& src, std::span<std::uint8_t> dst, int height, int width,
                        Interpolation interpolation = Interpolation::bilinear, CropBox box = {},
                        int box_of_height = 0, int box_of_width = 0) {
  const std::size_t need = static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
                           static_cast<std::size_t>(src.channels);
  if (height <= 0 || width <= 0 || dst.size() < need) {
    throw error("resize_into: expected a positive size and room for " + std::to_string(need) +
                " bytes, found " + std::to_string(height) + " x " + std::to_string(width) +
                " and " + std::to_string(dst.size()) + " bytes");
  }
  const bool whole = box.height <= 0 || box.width <= 0;
  if (whole && src.height == height && src.width == width) {
    std::memcpy(dst.data(), src.pixels.data(), need);
    return;
  }
  // The region in stb's normalised [0, 1] coordinates, the same at any decoding scale.
  float s0 = 0, t0 = 0, s1 = 1, t1 = 1;
  if (!whole) {
    const float fh = static_cast<float>(box_of_height > 0 ? box_of_height : src.height);
    const float fw = static_cast<float>(box_of_width > 0 ? box_of_width : src.width);
    s0 = static_cast<float>(box.left) / fw;
    s1 = static_cast<float>(box.left + box.width) / fw;
    t0 = static_cast<float>(box.top) / fh;
    t1 = static_cast<float>(box.top + box.height) / fh;
  }
  namespace stb = detail::stb;
  const stb::stbir_filter filter = interpolation == Interpolation::area ? stb::STBIR_FILTER_BOX
                                   : interpolation == Interpolation::bicubic
                                       ? stb::STBIR_FILTER_CATMULLROM
                                       : stb::STBIR_FILTER_TRIANGLE;
  const int ok = stb::stbir_resize_region(
      src.pixels.data(), src.width, src.height, src.width * src.channels, dst.data(), width, height,
      width * src.channels, stb::STBIR_TYPE_UINT8, src.channels, STBIR_ALPHA_CHANNEL_NONE, 0,
      stb::STBIR_EDGE_CLAMP, stb::STBIR_EDGE_CLAMP, filter, filter, stb::STBIR_COLORSPACE_LINEAR,
      nullptr, s0, t0, s1, t1);
  if (ok == 0) {
    throw error("resize_into: expected stb_image_resize to resample " + std::to_string(src.height) +
                " x " + std::to_string(src.width) + " to " + std::to_string(height) + " x " +
                std::to_string(width) + ", found it failed");
  }
}

}  // namespace memopt::io::image
