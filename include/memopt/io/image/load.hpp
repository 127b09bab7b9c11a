#pragma once
// io::image::load_into: one image file read, decoded and resized to a fixed shape.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/file_kind.hpp"
#include "memopt/io/image/decode.hpp"
#include "memopt/io/image/format.hpp"
#include "memopt/io/image/image.hpp"
#include "memopt/io/image/jpeg.hpp"
#include "memopt/io/image/resize.hpp"

namespace memopt::io::image {

/// What `load_into` makes of a file: Keras's `image_size`, `color_mode`, `interpolation` and
/// `crop_to_aspect_ratio`, and the most pixels a file may have (`max_pixels`).
struct LoadOptions {
  int height = 256;
  int width = 256;
  ColorMode color_mode = ColorMode::rgb;
  Interpolation interpolation = Interpolation::bilinear;
  bool crop_to_aspect_ratio = false;
  /// A file whose header claims more pixels (height x width, before any scaling) is refused
  /// before it is decoded: Pillow's limit by default (`default_max_pixels`). To lift it, use
  /// `std::numeric_limits<std::uint64_t>::max()`.
  std::uint64_t max_pixels = default_max_pixels;

  /// Bytes of one loaded image: height x width x channels.
  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
           static_cast<std::size_t>(channels_of(color_mode));
  }
};

namespace detail {

/// Reads the whole file at `path` into `buffer` (reusing its storage); raises
/// `memopt::error` with the system's reason. Anything but a regular file is refused without
/// blocking: a FIFO's open would wait for a writer forever, so the file is opened with
/// O_NONBLOCK and checked with fstat (the file opened, not the name, which may have been
/// swapped since it was listed); a stat first keeps devices from being opened at all.
inline void read_file(const std::filesystem::path& path, std::vector<std::uint8_t>& buffer) {
  auto not_regular = [](mode_t mode) {
    return error(std::string("expected a regular file, found ") + io::detail::kind_of(mode));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    throw error("cannot open (" + std::error_code(errno, std::generic_category()).message() + ")");
  if (::fstat(fd, &st) != 0) {
    const int code = errno;
    ::close(fd);
    throw error("cannot stat (" + std::error_code(code, std::generic_category()).message() + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw not_regular(st.st_mode);
  }
  buffer.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + done, buffer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int code = n < 0 ? errno : 0;
      ::close(fd);
      throw error(n < 0 ? "cannot read (" +
                              std::error_code(code, std::generic_category()).message() + ")"
                        : "expected " + std::to_string(buffer.size()) + " bytes, found " +
                              std::to_string(done) + " (the file shrank while read)");
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

}  // namespace detail

/// Reads the image file at `path`, decodes it (JPEG, PNG or BMP, by content) and resizes it
/// to `options`' shape into `dst` (`options.bytes()` bytes, row-major height x width x
/// channels). With `crop_to_aspect_ratio` the largest centred crop of the target's aspect
/// ratio is resized (Keras's `smart_resize`), else the whole image, its aspect ratio
/// ignored. A JPEG is decoded at the smallest DCT scale that keeps at least the target's
/// resolution in the region used, so a 2048 x 2048 photo bound for 256 x 256 decodes 1/64 of
/// its pixels; when that scale gives the target's size exactly (512 x 512 bound for 128 x 128),
/// it is decoded straight into `dst`, with no resize and no copy. The file's bytes and the
/// decoded image before its resize are kept in buffers per thread, so a worker thread that
/// loads many files reuses them (a large decoded image would otherwise be mapped and faulted
/// in afresh for every file).
///
/// Any failure (missing, unreadable, not an image, truncated, corrupt, more pixels than
/// `options.max_pixels`) raises `memopt::error` whose message begins with the file's path.
///
/// ```cpp
/// const mo::io::image::LoadOptions opts{.height = 128, .width = 128};
/// std::vector<std::uint8_t> pixels(opts.bytes());
/// mo::io::image::load_into("cats/001.jpg", opts, pixels);
/// ```
inline void load_into(const std::filesystem::path& path, const LoadOptions& options,
                      std::span<std::uint8_t> dst) {
  thread_local std::vector<std::uint8_t> bytes;
  thread_local Image decoded;
  try {
    detail::read_file(path, bytes);
    if (detect_format(bytes) == Format::jpeg) {
      const JpegInfo info = jpeg_info(bytes, options.max_pixels);
      int min_h = options.height, min_w = options.width;
      CropBox box{};
      if (options.crop_to_aspect_ratio) {
        box = aspect_crop(info.height, info.width, options.height, options.width);
        // Enough of the whole image that the crop keeps the target's resolution.
        min_h = static_cast<int>(
            (static_cast<long long>(options.height) * info.height + box.height - 1) / box.height);
        min_w = static_cast<int>(
            (static_cast<long long>(options.width) * info.width + box.width - 1) / box.width);
        if (box.height == info.height && box.width == info.width) box = CropBox{};
      }
      const tjscalingfactor f = jpeg_scale(info.height, info.width, min_h, min_w);
      decoded.height = TJSCALED(info.height, f);
      decoded.width = TJSCALED(info.width, f);
      decoded.channels = channels_of(options.color_mode);
      if (box.height == 0 && decoded.height == options.height && decoded.width == options.width) {
        decode_jpeg_into(bytes, options.color_mode, info, f, dst);
        return;
      }
      decoded.pixels.resize(decoded.bytes());
      decode_jpeg_into(bytes, options.color_mode, info, f, decoded.pixels);
      resize_into(decoded, dst, options.height, options.width, options.interpolation, box,
                  info.height, info.width);
      return;
    }
    const Image img = decode(bytes, options.color_mode, 0, 0, options.max_pixels);
    CropBox box{};
    if (options.crop_to_aspect_ratio) {
      box = aspect_crop(img.height, img.width, options.height, options.width);
      if (box.height == img.height && box.width == img.width) box = CropBox{};  // the whole
    }
    resize_into(img, dst, options.height, options.width, options.interpolation, box, img.height,
                img.width);
  } catch (const error& e) {
    throw error(path.string() + ": " + e.what());
  }
}

}  // namespace memopt::io::image
