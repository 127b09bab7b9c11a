#pragma once
// Test helpers: write small JPEG (TurboJPEG), PNG (libpng) and BMP (by hand) files of a
// smooth pattern, so that image tests build their own trees; and hostile ones (a BMP of any bit
// depth, PNG and JPEG headers claiming huge sizes), made here rather than checked in.

#include <png.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstddef>
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

/// A JPEG of `px` (TurboJPEG's pixel format `format`: TJPF_GRAY, TJPF_RGB, or TJPF_CMYK, which
/// TurboJPEG writes as YCCK with Adobe's marker, the values as given), without subsampling.
inline std::vector<std::uint8_t> jpeg_bytes(const std::vector<std::uint8_t>& px, int height,
                                            int width, int format, int quality = 95) {
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int sampling = format == TJPF_GRAY ? TJSAMP_GRAY : TJSAMP_444;
  const int rc = tjCompress2(tj, px.data(), width, width * tjPixelSize[format], height, format,
                             &jpeg, &size, sampling, quality, 0);
  std::vector<std::uint8_t> out;
  if (rc == 0) out.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return out;
}

inline void write_jpeg(const std::filesystem::path& path, const std::vector<std::uint8_t>& px,
                       int height, int width, int channels, int quality = 95) {
  const auto jpeg = jpeg_bytes(px, height, width, channels == 1 ? TJPF_GRAY : TJPF_RGB, quality);
  write_bytes(path, jpeg.data(), jpeg.size());
}

/// An 8 x 8 grey JPEG whose frame header (SOF0) then claims `height` x `width`: the header of a
/// huge image, with the data of a tiny one.
inline std::vector<std::uint8_t> jpeg_claiming(int height, int width) {
  auto jpeg = jpeg_bytes(std::vector<std::uint8_t>(64, 100), 8, 8, TJPF_GRAY);
  for (std::size_t i = 2; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {  // length (2), precision (1), height, width
      jpeg[i + 5] = static_cast<std::uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<std::uint8_t>(height);
      jpeg[i + 7] = static_cast<std::uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<std::uint8_t>(width);
      return jpeg;
    }
  }
  throw std::runtime_error("jpeg_claiming: no SOF0 marker in TurboJPEG's output");
}

/// PNG's chunk checksum (CRC-32, as zlib's crc32).
inline std::uint32_t png_crc(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/// A 69-byte PNG whose header claims `height` x `width` RGBA pixels, followed by 12 bytes of
/// image data (the first bytes of a zlib stream) and IEND.
inline std::vector<std::uint8_t> png_claiming(std::uint32_t height, std::uint32_t width) {
  std::vector<std::uint8_t> f = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto u32 = [&f](std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) f.push_back(static_cast<std::uint8_t>(v >> s));
  };
  auto chunk = [&](const char* type, std::vector<std::uint8_t> data) {
    u32(static_cast<std::uint32_t>(data.size()));
    const std::size_t start = f.size();
    f.insert(f.end(), type, type + 4);
    f.insert(f.end(), data.begin(), data.end());
    u32(png_crc(f.data() + start, f.size() - start));
  };
  std::vector<std::uint8_t> ihdr;
  for (const std::uint32_t v : {width, height}) {
    for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<std::uint8_t>(v >> s));
  }
  ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});  // 8 bits, RGBA, deflate, no filter, no interlace
  chunk("IHDR", ihdr);
  chunk("IDAT", {0x78, 0x9C, 0x63, 0x60, 0x10, 0x10, 0x10, 0x00, 0x00, 0x00, 0x34, 0x00});
  chunk("IEND", {});
  return f;
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

/// Bytes a BMP row of `width` pixels at `bits` per pixel takes, without and with its padding.
inline std::size_t bmp_row_bytes(int width, int bits) {
  return (static_cast<std::size_t>(width) * bits + 7) / 8;
}
inline std::size_t bmp_stride(int width, int bits) {
  return (bmp_row_bytes(width, bits) + 3) / 4 * 4;
}

/// Where a BMP from `bmp_bytes` has its first row: after the headers, the palette (1 << bits
/// entries below 16 bits) or the bit-field masks (compression 3).
inline std::size_t bmp_offset(int bits, int compression) {
  return 54 + (bits <= 8 ? 4u << bits : 0) + (compression == 3 ? 12 : 0);
}

/// A whole BMP (BITMAPINFOHEADER) of `bits` per pixel (1, 4, 8 with a grey palette; 16, 24, 32)
/// with `compression` 0, or 3 (bit-field masks: 5-6-5 at 16 bits, 8-8-8 at 32), rows padded to
/// 4 bytes, stored top-down with a negative height when asked; its pixel bytes are a pattern
/// (any byte is valid at these depths).
inline std::vector<std::uint8_t> bmp_bytes(int height, int width, int bits, int compression = 0,
                                           bool top_down = false) {
  const std::size_t offset = bmp_offset(bits, compression);
  const std::size_t stride = bmp_stride(width, bits);
  std::vector<std::uint8_t> f(offset + stride * static_cast<std::size_t>(height), 0);
  auto put = [&f](std::size_t at, std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i) f[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  f[0] = 'B';
  f[1] = 'M';
  put(2, static_cast<std::uint32_t>(f.size()), 4);
  put(10, static_cast<std::uint32_t>(offset), 4);
  put(14, 40, 4);
  put(18, static_cast<std::uint32_t>(width), 4);
  put(22, static_cast<std::uint32_t>(top_down ? -height : height), 4);
  put(26, 1, 2);
  put(28, static_cast<std::uint32_t>(bits), 2);
  put(30, static_cast<std::uint32_t>(compression), 4);
  put(34, static_cast<std::uint32_t>(stride * height), 4);
  if (bits <= 8) {
    const int entries = 1 << bits;
    for (int i = 0; i < entries; ++i) {
      const auto grey = static_cast<std::uint32_t>(i * 255 / (entries - 1));
      put(54 + 4 * static_cast<std::size_t>(i), grey | grey << 8 | grey << 16, 4);
    }
  }
  if (compression == 3) {
    const bool wide = bits == 32;
    put(54, wide ? 0xFF0000u : 0xF800u, 4);
    put(58, wide ? 0x00FF00u : 0x07E0u, 4);
    put(62, wide ? 0x0000FFu : 0x001Fu, 4);
  }
  for (std::size_t i = offset; i < f.size(); ++i) f[i] = static_cast<std::uint8_t>(i * 37 + 11);
  return f;
}

}  // namespace memopt::testing
