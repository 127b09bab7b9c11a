#pragma once
// Test helpers: write small JPEG (TurboJPEG), PNG (libpng) and BMP (by hand) files of a
// smooth pattern, so that image tests build their own trees.

#include <png.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace memopt::testing {

/// A smooth height x width x channels pattern (1 or 3 channels), different per `seed`.
inline std::vector<std::uint8_t> pattern(int height, int width, int channels, int seed = 0) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = 128 + 100 * std::sin((x + 3 * seed) / (6.0 + c)) *
                                   std::cos((y + 5 * seed) / (9.0 + 2 * c));
        px[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(std::lround(v));
      }
    }
  }
  return px;
}

inline void write_bytes(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline void write_jpeg(const std::filesystem::path& path, const std::vector<std::uint8_t>& px,
                       int height, int width, int channels, int quality = 95) {
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  const int sampling = channels == 1 ? TJSAMP_GRAY : TJSAMP_444;
  const int rc = tjCompress2(tj, px.data(), width, width * channels, height, format, &jpeg, &size,
                             sampling, quality, 0);
  if (rc == 0) write_bytes(path, jpeg, size);
  tjFree(jpeg);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed for " + path.string());
}

inline void write_png(const std::filesystem::path& path, const std::vector<std::uint8_t>& px,
                      int height, int width, int channels) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(width);
  png.height = static_cast<png_uint_32>(height);
  png.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (png_image_write_to_file(&png, path.c_str(), 0, px.data(), 0, nullptr) == 0) {
    throw std::runtime_error("png_image_write_to_file failed for " + path.string());
  }
}

/// A 24-bit uncompressed bottom-up BMP (BITMAPINFOHEADER), rows padded to 4 bytes.
inline void write_bmp(const std::filesystem::path& path, const std::vector<std::uint8_t>& rgb,
                      int height, int width) {
  const std::uint32_t row = (static_cast<std::uint32_t>(width) * 3 + 3) & ~3u;
  const std::uint32_t data = row * static_cast<std::uint32_t>(height);
  std::vector<std::uint8_t> f(54 + data, 0);
  auto put = [&f](std::size_t at, std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i) f[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  f[0] = 'B';
  f[1] = 'M';
  put(2, static_cast<std::uint32_t>(f.size()), 4);
  put(10, 54, 4);
  put(14, 40, 4);
  put(18, static_cast<std::uint32_t>(width), 4);
  put(22, static_cast<std::uint32_t>(height), 4);
  put(26, 1, 2);
  put(28, 24, 2);
  put(34, data, 4);
  for (int y = 0; y < height; ++y) {
    std::uint8_t* out = f.data() + 54 + static_cast<std::size_t>(height - 1 - y) * row;
    for (int x = 0; x < width; ++x) {
      const std::uint8_t* p = rgb.data() + (static_cast<std::size_t>(y) * width + x) * 3;
      out[3 * x + 0] = p[2];  // BMP stores BGR
      out[3 * x + 1] = p[1];
      out[3 * x + 2] = p[0];
    }
  }
  write_bytes(path, f.data(), f.size());
}

}  // namespace memopt::testing
