#pragma once
// io::image::decode_jpeg: JPEG through libjpeg-turbo's TurboJPEG API, scaled in the DCT domain
// when the caller needs at most half the source's size.

// libjpeg-turbo comes with the CMake target memopt::images, not with memopt::memopt:
// name the target before the compiler's "No such file" (the include below then stops
// the compilation).
#if !__has_include(<turbojpeg.h>)
#error \
    "memopt: the image headers need turbojpeg.h (libjpeg-turbo), which comes with the memopt::images CMake target: target_link_libraries(app PRIVATE memopt::images)"
#endif
#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "memopt/core/error.hpp"
#include "memopt/io/image/image.hpp"

namespace memopt::io::image {
namespace detail {

struct TjDestroy {
  void operator()(void* handle) const noexcept { tjDestroy(handle); }
};

/// This thread's TurboJPEG decompressor: made once per thread, so that decoding allocates no
/// handle per image, and never shared, since a handle is not thread-safe.
inline tjhandle jpeg_decompressor() {
  thread_local std::unique_ptr<void, TjDestroy> handle(tjInitDecompress());
  if (!handle)
    throw error(std::string("decode_jpeg: tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
  return handle.get();
}

inline std::string tj_reason(tjhandle handle) {
  return tjGetErrorStr2(handle);
}

/// `a * b / 255` rounded to nearest, as Pillow's `MULDIV255` computes it.
constexpr int muldiv255(int a, int b) noexcept {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

/// Converts `count` pixels of a CMYK JPEG's samples, as libjpeg gives them (also from YCCK),
/// to `channels` (3: RGB, 1: grey) in `dst`, as Pillow does: it reads every CMYK JPEG with
/// Adobe's inverted convention (a stored 255 is no ink), so ink C = 255 - c and K = 255 - k,
/// and then R = (255 - K) - (255 - K) C / 255, about c k / 255; grey is the luma of that RGB
/// (Pillow's `convert("L")` goes through RGB). TensorFlow inverts only where the file has
/// Adobe's marker, which Photoshop's CMYK JPEGs carry.
inline void cmyk_to(const std::uint8_t* src, std::uint8_t* dst, int channels,
                    std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i, src += 4) {
    const int k = src[3];
    const auto r = static_cast<std::uint8_t>(k - muldiv255(255 - src[0], k));
    const auto g = static_cast<std::uint8_t>(k - muldiv255(255 - src[1], k));
    const auto b = static_cast<std::uint8_t>(k - muldiv255(255 - src[2], k));
    if (channels == 1) {
      *dst++ = luma(r, g, b);
    } else {
      *dst++ = r;
      *dst++ = g;
      *dst++ = b;
    }
  }
}

}  // namespace detail

/// A JPEG's size and whether its samples are CMYK (or YCCK), read from its header alone.
struct JpegInfo {
  int height = 0;
  int width = 0;
  bool cmyk = false;
};

/// Reads the header of the JPEG in `bytes`: its size, and whether it is CMYK. An image of more
/// than `max_pixels` pixels (`default_max_pixels`; its full size, whatever scale it is decoded
/// at, as Pillow counts) is refused here, before anything of its size is allocated. Raises
/// `memopt::error` when the header is not readable or the image too large.
///
/// ```cpp
/// const auto info = mo::io::image::jpeg_info(bytes);
/// std::printf("%d x %d\n", info.height, info.width);
/// ```
inline JpegInfo jpeg_info(std::span<const std::uint8_t> bytes,
                          std::uint64_t max_pixels = default_max_pixels) {
  tjhandle tj = detail::jpeg_decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    throw error("decode_jpeg: expected a JPEG header, found an unreadable one (" +
                detail::tj_reason(tj) + ")");
  }
  detail::check_pixel_limit("decode_jpeg", static_cast<std::uint64_t>(height),
                            static_cast<std::uint64_t>(width), max_pixels);
  return {height, width, colorspace == TJCS_CMYK || colorspace == TJCS_YCCK};
}

/// The DCT scaling factor (numerator / denominator) that `decode_jpeg` uses for a
/// `height` x `width` JPEG when at least `min_height` x `min_width` pixels are needed: the
/// smallest factor of libjpeg-turbo's set (1/8 ... 1/2) that still yields that many, or 1/1
/// when even 1/2 is too small, or when either minimum is 0 (no size asked for). Only factors up to
/// 1/2 are used: above that the scaled inverse DCT saves little, and the resize after it does the
/// rest.
///
/// ```cpp
/// // 1/8: 256 x 256 straight from the DCT
/// auto f = mo::io::image::jpeg_scale(2048, 2048, 256, 256);
/// ```
inline tjscalingfactor jpeg_scale(int height, int width, int min_height, int min_width) {
  tjscalingfactor best{1, 1};
  if (min_height <= 0 || min_width <= 0) return best;  // no size asked for: full size
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (2 * f.num > f.denom) continue;  // larger than 1/2
    if (TJSCALED(height, f) < min_height || TJSCALED(width, f) < min_width) continue;
    if (f.num * best.denom < best.num * f.denom) best = f;
  }
  return best;
}

/// Decodes the JPEG in `bytes`, whose header says it is `info.height` x `info.width`, at the
/// DCT scale `f` into `dst`: `TJSCALED(info.height, f)` rows of `TJSCALED(info.width, f)`
/// pixels of `channels_of(mode)` values, row-major without padding. `dst` must hold that many
/// bytes. The caller that already read the header (`jpeg_info`) and chose the scale
/// (`jpeg_scale`) decodes here straight into its own buffer: no header read twice, no image
/// allocated, nothing copied after (but for a CMYK JPEG, decoded to CMYK first and converted).
/// Errors as `decode_jpeg`.
///
/// ```cpp
/// const auto info = mo::io::image::jpeg_info(bytes);
/// const auto f = mo::io::image::jpeg_scale(info.height, info.width, 128, 128);
/// const std::size_t height = TJSCALED(info.height, f), width = TJSCALED(info.width, f);
/// std::vector<std::uint8_t> pixels(height * width * 3);
/// mo::io::image::decode_jpeg_into(bytes, mo::io::image::ColorMode::rgb, info, f, pixels);
/// ```
inline void decode_jpeg_into(std::span<const std::uint8_t> bytes, ColorMode mode, JpegInfo info,
                             tjscalingfactor f, std::span<std::uint8_t> dst) {
  const int height = TJSCALED(info.height, f), width = TJSCALED(info.width, f);
  const int channels = channels_of(mode);
  const std::size_t need = static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
                           static_cast<std::size_t>(channels);
  if (dst.size() < need) {
    throw error("decode_jpeg: expected room for " + std::to_string(need) + " bytes, found " +
                std::to_string(dst.size()));
  }
  tjhandle tj = detail::jpeg_decompressor();
  const auto size = static_cast<unsigned long>(bytes.size());
  const std::size_t pixels = need / static_cast<std::size_t>(channels);
  int rc = 0;
  if (info.cmyk) {
    // libjpeg converts CMYK and YCCK to CMYK only: its 4 bytes a pixel take a buffer of their
    // own, for this (rare) image alone.
    PixelBuffer cmyk(pixels * 4);
    rc = tjDecompress2(tj, bytes.data(), size, cmyk.data(), width, width * 4, height, TJPF_CMYK, 0);
    if (rc == 0) detail::cmyk_to(cmyk.data(), dst.data(), channels, pixels);
  } else {
    const int format = mode == ColorMode::grayscale ? TJPF_GRAY : TJPF_RGB;
    rc = tjDecompress2(tj, bytes.data(), size, dst.data(), width, width * channels, height, format,
                       0);
  }
  if (rc != 0) {
    throw error("decode_jpeg: expected complete JPEG data, found an error (" +
                detail::tj_reason(tj) + ")");
  }
}

/// Decodes the JPEG in `bytes` to 8-bit pixels of `mode` (grayscale: the JPEG's luma, as
/// libjpeg's own conversion and TensorFlow's `decode_jpeg(channels=1)`; rgb: RGB). When
/// `min_height` x `min_width` is at most half the source, the image is scaled down in the DCT
/// domain while decoding (`jpeg_scale`): for a high-resolution photo resized to a small
/// network input, most of the decoding work is never done. The result is at least
/// `min_height` x `min_width` unless the source is smaller.
///
/// A CMYK or YCCK JPEG (Adobe's, as Photoshop writes them) is converted to RGB, and grey from
/// that RGB, as Pillow does (`detail::cmyk_to`). An image of more than `max_pixels` pixels is
/// refused on its header (`jpeg_info`). Any error or warning of libjpeg-turbo (a truncated file,
/// corrupt data) raises `memopt::error` with its reason: an image is decoded entirely or not at
/// all.
///
/// ```cpp
/// auto img = mo::io::image::decode_jpeg(bytes, mo::io::image::ColorMode::rgb, 256, 256);
/// ```
inline Image decode_jpeg(std::span<const std::uint8_t> bytes, ColorMode mode, int min_height = 0,
                         int min_width = 0, std::uint64_t max_pixels = default_max_pixels) {
  const JpegInfo info = jpeg_info(bytes, max_pixels);
  const tjscalingfactor f = jpeg_scale(info.height, info.width, min_height, min_width);
  Image out;
  out.height = TJSCALED(info.height, f);
  out.width = TJSCALED(info.width, f);
  out.channels = channels_of(mode);
  out.pixels.resize(out.bytes());
  decode_jpeg_into(bytes, mode, info, f, out.pixels);
  return out;
}

}  // namespace memopt::io::image
