// io::image: format detection, JPEG/PNG/BMP decoding, DCT-domain scaling, resizing and
// Keras's aspect crop, checked against Pillow's pixels on committed fixtures
// (tests/data/images, made by make_fixtures.py there); hostile files (truncated BMPs, headers
// claiming huge images) refused, and CMYK JPEGs read as Pillow reads them.

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "image_files.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/image_directory.hpp"
#include "memopt/io/image/decode.hpp"
#include "memopt/io/image/format.hpp"
#include "memopt/io/image/jpeg.hpp"
#include "memopt/io/image/load.hpp"
#include "memopt/io/image/resize.hpp"
#include "temp_dir.hpp"

namespace img = memopt::io::image;
using memopt::testing::TempDir;

namespace {

const std::filesystem::path kImages = std::filesystem::path(MEMOPT_TEST_DATA_DIR) / "images";

std::vector<std::uint8_t> read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing fixture ", path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Diff {
  double mean = 0;
  int max = 0;
};

template <class A, class B>
Diff compare(const A& a, const B& b) {
  REQUIRE(a.size() == b.size());
  Diff d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    d.mean += e;
    d.max = std::max(d.max, e);
  }
  d.mean /= static_cast<double>(a.size());
  return d;
}

template <class A, class B>
bool same(const A& a, const B& b) {
  return std::ranges::equal(a, b);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of the memopt::error that `f` raises, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const memopt::error& e) {
    return e.what();
  }
  return "(no error)";
}

// The process's peak resident set in KiB, after resetting it where Linux allows
// (/proc/self/clear_refs, "5"), so that a later peak shows what came after.
long reset_peak_rss() {
  if (std::ofstream clear("/proc/self/clear_refs"); clear) clear << "5";
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}
long peak_rss() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

TEST_CASE("detect_format tells JPEG, PNG and BMP by their first bytes") {
  const auto jpg = read_all(kImages / "src_large.jpg");
  const auto png = read_all(kImages / "src_rgb.png");
  const auto bmp = read_all(kImages / "src_rgb.bmp");
  CHECK(img::detect_format(jpg) == img::Format::jpeg);
  CHECK(img::detect_format(png) == img::Format::png);
  CHECK(img::detect_format(bmp) == img::Format::bmp);
  const std::vector<std::uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  CHECK(img::detect_format(text) == img::Format::unknown);
  CHECK(img::detect_format(std::span(png).first(4)) == img::Format::unknown);
  CHECK_THROWS_WITH_AS(img::decode(text, img::ColorMode::rgb),
                       doctest::Contains("expected a JPEG, PNG or BMP image"), memopt::error);
}

TEST_CASE("decoders return the pixels that were written (PNG, BMP exactly; JPEG closely)") {
  TempDir tmp;
  const int h = 37, w = 53;
  const auto rgb = memopt::testing::pattern(h, w, 3, 1);
  const auto grey = memopt::testing::pattern(h, w, 1, 2);
  memopt::testing::write_png(tmp / "c.png", rgb, h, w, 3);
  memopt::testing::write_png(tmp / "g.png", grey, h, w, 1);
  memopt::testing::write_bmp(tmp / "c.bmp", rgb, h, w);
  memopt::testing::write_jpeg(tmp / "c.jpg", rgb, h, w, 3, 100);

  const auto png = img::decode(read_all(tmp / "c.png"), img::ColorMode::rgb);
  CHECK(png.height == h);
  CHECK(png.width == w);
  CHECK(png.channels == 3);
  CHECK(same(png.pixels, rgb));
  CHECK(same(img::decode(read_all(tmp / "g.png"), img::ColorMode::grayscale).pixels, grey));
  // Grey to RGB replicates the grey.
  const auto grey3 = img::decode(read_all(tmp / "g.png"), img::ColorMode::rgb);
  REQUIRE(grey3.pixels.size() == grey.size() * 3);
  CHECK(grey3.pixels[3 * 100 + 0] == grey[100]);
  CHECK(grey3.pixels[3 * 100 + 2] == grey[100]);
  // Colour to grey is Pillow's luma.
  const auto luma = img::decode(read_all(tmp / "c.png"), img::ColorMode::grayscale);
  REQUIRE(luma.pixels.size() == grey.size());
  const std::size_t k = 321;
  const double expect = rgb[3 * k] * 0.299 + rgb[3 * k + 1] * 0.587 + rgb[3 * k + 2] * 0.114;
  CHECK(std::abs(luma.pixels[k] - expect) <= 0.51);

  CHECK(same(img::decode(read_all(tmp / "c.bmp"), img::ColorMode::rgb).pixels, rgb));

  const auto jpg = img::decode(read_all(tmp / "c.jpg"), img::ColorMode::rgb);
  CHECK(jpg.height == h);
  CHECK(jpg.width == w);
  const Diff d = compare(jpg.pixels, rgb);
  MESSAGE("JPEG q100 round trip: mean |diff| ", d.mean, ", max ", d.max);
  CHECK(d.mean < 1.0);
  CHECK(d.max <= 8);
}

TEST_CASE("jpeg_scale picks the smallest DCT factor up to 1/2 that keeps the needed size") {
  auto f = img::jpeg_scale(2048, 2048, 256, 256);
  CHECK(f.num * 8 == f.denom);  // 1/8: 256 x 256
  f = img::jpeg_scale(600, 800, 256, 256);
  CHECK(f.num * 2 == f.denom);  // 3/8 gives 225 rows, too few; 1/2 gives 300
  f = img::jpeg_scale(300, 300, 256, 256);
  CHECK(f.num == f.denom);  // more than half: no DCT scaling
  f = img::jpeg_scale(1024, 1024, 300, 100);
  CHECK(f.num * 8 == 3 * f.denom);  // 3/8: 384 rows >= 300

  // The decoded size follows: a 384 x 512 JPEG needed at 48 x 64 decodes at 1/8.
  const auto bytes = read_all(kImages / "src_large.jpg");
  const auto small = img::decode_jpeg(bytes, img::ColorMode::rgb, 48, 64);
  CHECK(small.height == 48);
  CHECK(small.width == 64);
  const auto half = img::decode_jpeg(bytes, img::ColorMode::rgb, 100, 120);
  CHECK(half.height == 144);  // 3/8
  CHECK(half.width == 192);
  const auto full = img::decode_jpeg(bytes, img::ColorMode::rgb);
  CHECK(full.height == 384);
  CHECK(full.width == 512);
}

TEST_CASE("aspect_crop is Keras's smart_resize crop") {
  const auto box = img::aspect_crop(340, 500, 200, 200);
  CHECK(box.top == 0);
  CHECK(box.left == 80);
  CHECK(box.height == 340);
  CHECK(box.width == 340);
  const auto tall = img::aspect_crop(500, 300, 100, 200);  // wide target on a tall image
  CHECK(tall.height == 150);
  CHECK(tall.width == 300);
  CHECK(tall.top == 175);
  CHECK(tall.left == 0);
}

TEST_CASE("load_into matches Pillow's resize on the fixtures") {
  struct Case {
    const char* name;
    const char* source;
    img::ColorMode mode;
    int height, width;
    img::Interpolation interpolation;
    bool crop;
    double mean_tolerance;
    int max_tolerance;
  };
  using img::ColorMode;
  using img::Interpolation;
  // Lossless sources: stb's filters against Pillow's differ by rounding inside, at the edges
  // (stb clamps, Pillow renormalises the truncated kernel), and for area by stb's box having
  // 1-pixel ramps where Pillow's is exact. JPEG sources reduced in the
  // DCT domain differ more: that reduction averages 8 x 8 blocks rather than filtering.
  const Case cases[] = {
      {"png_rgb_bilinear_40x32", "src_rgb.png", ColorMode::rgb, 40, 32, Interpolation::bilinear,
       false, 1.0, 12},
      {"png_rgb_area_40x32", "src_rgb.png", ColorMode::rgb, 40, 32, Interpolation::area, false, 1.5,
       12},
      {"png_rgb_bilinear_150x130", "src_rgb.png", ColorMode::rgb, 150, 130, Interpolation::bilinear,
       false, 1.0, 6},
      {"png_rgb_bilinear_48x48_crop", "src_rgb.png", ColorMode::rgb, 48, 48,
       Interpolation::bilinear, true, 1.0, 12},
      {"png_gray_bilinear_35x25", "src_gray.png", ColorMode::grayscale, 35, 25,
       Interpolation::bilinear, false, 1.0, 12},
      {"png_rgb_as_gray_bilinear_40x32", "src_rgb.png", ColorMode::grayscale, 40, 32,
       Interpolation::bilinear, false, 1.0, 12},
      {"bmp_rgb_bilinear_30x30", "src_rgb.bmp", ColorMode::rgb, 30, 30, Interpolation::bilinear,
       false, 1.0, 12},
      {"jpg_rgb_bilinear_48x64", "src_large.jpg", ColorMode::rgb, 48, 64, Interpolation::bilinear,
       false, 2.0, 16},
      {"jpg_rgb_bilinear_100x120", "src_large.jpg", ColorMode::rgb, 100, 120,
       Interpolation::bilinear, false, 2.0, 16},
      {"jpg_gray_area_96x128", "src_large.jpg", ColorMode::grayscale, 96, 128, Interpolation::area,
       false, 2.0, 16},
      {"jpg_rgb_bilinear_64x64_crop", "src_large.jpg", ColorMode::rgb, 64, 64,
       Interpolation::bilinear, true, 2.0, 16},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const img::LoadOptions options{.height = c.height,
                                   .width = c.width,
                                   .color_mode = c.mode,
                                   .interpolation = c.interpolation,
                                   .crop_to_aspect_ratio = c.crop};
    std::vector<std::uint8_t> out(options.bytes());
    img::load_into(kImages / c.source, options, out);
    const auto ref = read_all(kImages / (std::string("ref_") + c.name + ".u8"));
    const Diff d = compare(out, ref);
    MESSAGE(name, ": mean |diff| ", d.mean, ", max ", d.max);
    CHECK(d.mean <= c.mean_tolerance);
    CHECK(d.max <= c.max_tolerance);
  }
}

TEST_CASE("load_into names the file in every error") {
  TempDir tmp;
  const auto rgb = memopt::testing::pattern(64, 64, 3);
  memopt::testing::write_jpeg(tmp / "good.jpg", rgb, 64, 64, 3);
  const auto good = read_all(tmp / "good.jpg");
  memopt::testing::write_bytes(tmp / "truncated.jpg", good.data(), good.size() / 2);
  memopt::testing::write_bytes(tmp / "text.png", "not an image at all", 19);
  memopt::testing::write_png(tmp / "p.png", rgb, 64, 64, 3);
  const auto png = read_all(tmp / "p.png");
  memopt::testing::write_bytes(tmp / "truncated.png", png.data(), png.size() - 40);

  const img::LoadOptions options{.height = 16, .width = 16};
  std::vector<std::uint8_t> out(options.bytes());
  for (const char* bad : {"truncated.jpg", "text.png", "truncated.png", "missing.bmp"}) {
    CAPTURE(bad);
    const std::string path = (tmp / bad).string();
    CHECK_THROWS_WITH_AS(img::load_into(tmp / bad, options, out), doctest::Contains(path.c_str()),
                         memopt::error);
  }
  CHECK_NOTHROW(img::load_into(tmp / "good.jpg", options, out));
}

TEST_CASE("load_into decodes straight into its buffer when the DCT scale gives the target size") {
  // src_large.jpg is 384 x 512: 48 x 64 is its 1/8 scale and 96 x 128 its 1/4, which
  // load_into decodes without a resize; the pixels must be decode_jpeg's at that scale, every
  // byte of the buffer written, and with a crop of the image's own aspect ratio too.
  const auto bytes = read_all(kImages / "src_large.jpg");
  struct Case {
    int height, width;
    img::ColorMode mode;
    bool crop;
  };
  for (const Case c :
       {Case{48, 64, img::ColorMode::rgb, false}, Case{96, 128, img::ColorMode::grayscale, false},
        Case{96, 128, img::ColorMode::rgb, true}}) {
    CAPTURE(c.height);
    CAPTURE(c.crop);
    const img::LoadOptions options{
        .height = c.height, .width = c.width, .color_mode = c.mode, .crop_to_aspect_ratio = c.crop};
    const auto want = img::decode_jpeg(bytes, c.mode, c.height, c.width);
    REQUIRE(want.height == c.height);
    REQUIRE(want.width == c.width);
    // Two fills, so that a byte left unwritten shows in one of them.
    for (const std::uint8_t fill : {std::uint8_t{0x00}, std::uint8_t{0xFF}}) {
      std::vector<std::uint8_t> out(options.bytes(), fill);
      img::load_into(kImages / "src_large.jpg", options, out);
      CHECK(same(out, want.pixels));
    }
  }
  // Decoded at 1/4 into a buffer one byte short: an error naming the file, nothing written
  // past the end.
  const img::LoadOptions options{.height = 96, .width = 128};
  std::vector<std::uint8_t> out(options.bytes() - 1);
  const std::string path = (kImages / "src_large.jpg").string();
  CHECK_THROWS_WITH_AS(img::load_into(kImages / "src_large.jpg", options, out),
                       doctest::Contains(path.c_str()), memopt::error);
}

TEST_CASE("load_into's kept buffers follow the image: a small JPEG after a large one") {
  // The decoded image before its resize is kept per thread; a smaller one after a larger one
  // must be resized from its own pixels, not from the larger one's leftovers.
  TempDir tmp;
  const auto a = memopt::testing::pattern(64, 64, 3);
  const auto b = memopt::testing::pattern(40, 30, 3);
  memopt::testing::write_jpeg(tmp / "a.jpg", a, 64, 64, 3);
  memopt::testing::write_jpeg(tmp / "b.jpg", b, 40, 30, 3);
  const img::LoadOptions options{.height = 20, .width = 24};
  std::vector<std::uint8_t> first(options.bytes()), again(options.bytes()), want(options.bytes());
  img::load_into(tmp / "b.jpg", options, first);
  img::load_into(tmp / "a.jpg", options, again);
  img::load_into(tmp / "b.jpg", options, again);
  const auto decoded = img::decode_jpeg(read_all(tmp / "b.jpg"), img::ColorMode::rgb, 20, 24);
  img::resize_into(decoded, want, 20, 24);
  CHECK(first == want);
  CHECK(again == want);
}

TEST_CASE("a BMP shorter than the rows its headers promise is refused, at every depth it is read") {
  // stb_image reads past the end of the data as zeros: a truncated or header-only BMP decoded
  // as black. Pillow refuses both, but accepts a file without the last row's padding.
  TempDir tmp;
  struct Case {
    int bits, compression;
    bool top_down;
  };
  const int h = 7, w = 13;  // odd, so that every depth pads its rows
  const img::LoadOptions options{.height = 8, .width = 8};
  std::vector<std::uint8_t> out(options.bytes());
  for (const Case c : {Case{1, 0, false}, Case{4, 0, false}, Case{8, 0, false}, Case{16, 0, false},
                       Case{24, 0, false}, Case{24, 0, true}, Case{32, 0, false},
                       Case{16, 3, false}, Case{32, 3, false}}) {
    CAPTURE(c.bits);
    CAPTURE(c.compression);
    CAPTURE(c.top_down);
    const auto whole = memopt::testing::bmp_bytes(h, w, c.bits, c.compression, c.top_down);
    const auto decoded = img::decode_bmp(whole, img::ColorMode::rgb);
    CHECK(decoded.height == h);
    CHECK(decoded.width == w);
    const std::size_t need = whole.size() - (memopt::testing::bmp_stride(w, c.bits) -
                                             memopt::testing::bmp_row_bytes(w, c.bits));
    const auto unpadded = img::decode_bmp(std::span(whole).first(need), img::ColorMode::rgb);
    CHECK(same(unpadded.pixels, decoded.pixels));
    // One byte of pixels short, and the headers (and palette or masks) alone.
    for (const std::size_t size : {need - 1, memopt::testing::bmp_offset(c.bits, c.compression)}) {
      CAPTURE(size);
      const auto path = tmp / ("cut_" + std::to_string(c.bits) + "_" +
                               std::to_string(c.compression) + "_" + std::to_string(size) + ".bmp");
      memopt::testing::write_bytes(path, whole.data(), size);
      const std::string message = error_of([&] { img::load_into(path, options, out); });
      CAPTURE(message);
      CHECK(has(message,
                path.string() + ": decode_bmp: expected " + std::to_string(need) + " bytes"));
      CHECK(has(message, "found " + std::to_string(size) + ": the file is truncated"));
    }
  }
}

TEST_CASE("an image over max_pixels is refused on its header, before its pixels are allocated") {
  // The files: 69 bytes of PNG claiming 32767 x 32767 (4.2 GB of RGBA before this
  // check), 54 bytes of BMP claiming 20000 x 20000 (2.35 GB, and a black image), a JPEG claiming
  // 20000 x 20000 (1.2 GB decoded whole).
  TempDir tmp;
  struct Case {
    const char* name;
    std::vector<std::uint8_t> bytes;
    const char* found;
  };
  auto bmp = memopt::testing::bmp_bytes(1, 1, 24);
  bmp.resize(54);
  for (int i = 0; i < 4; ++i) {
    bmp[18 + i] = static_cast<std::uint8_t>(20000 >> (8 * i));
    bmp[22 + i] = static_cast<std::uint8_t>(20000 >> (8 * i));
  }
  const Case cases[] = {
      {"bomb.png", memopt::testing::png_claiming(32767, 32767), "found 32767 x 32767"},
      {"bomb.bmp", bmp, "found 20000 x 20000"},
      {"bomb.jpg", memopt::testing::jpeg_claiming(20000, 20000), "found 20000 x 20000"},
  };
  CHECK(cases[0].bytes.size() == 69);
  const img::LoadOptions options{.height = 64, .width = 64};
  std::vector<std::uint8_t> out(options.bytes());
  const long before = reset_peak_rss();
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto path = tmp / c.name;
    memopt::testing::write_bytes(path, c.bytes.data(), c.bytes.size());
    const std::string limit = "expected at most 89478485 pixels";
    const std::string raise = "raise max_pixels in LoadOptions or ImageDirectoryOptions";
    std::string message = error_of([&] { img::load_into(path, options, out); });
    CAPTURE(message);
    CHECK(has(message, path.string() + ": decode_"));
    CHECK(has(message, limit));
    CHECK(has(message, c.found));
    CHECK(has(message, raise));
    // Refused on the header, before the data's own error (the PNG's 12 bytes of IDAT end early).
    message = error_of([&] { (void)img::decode(c.bytes, img::ColorMode::rgb); });
    CHECK(has(message, limit));
    CHECK(has(message, raise));
  }
  const long grew = peak_rss() - before;
  MESSAGE("peak RSS grew by ", grew, " KiB refusing them");
  CHECK(grew < 64 * 1024);
}

TEST_CASE("a truncated PNG under the limit costs only the rows it has, not a zeroed image") {
  // 9000 x 9000 is under the limit (81 million pixels) and its 324 MB RGBA buffer is allocated;
  // libpng fails at the first row. A vector that zero-filled it touched all 324 MB first.
  const auto png = memopt::testing::png_claiming(9000, 9000);
  const long before = reset_peak_rss();
  const std::string message = error_of([&] { (void)img::decode(png, img::ColorMode::rgb); });
  CAPTURE(message);
  CHECK(has(message, "decode_png: expected complete PNG data"));
  const long grew = peak_rss() - before;
  MESSAGE("peak RSS grew by ", grew, " KiB");
  CHECK(grew < 64 * 1024);
}

TEST_CASE("max_pixels refuses one pixel over it and decodes at it, in every format and stage") {
  TempDir tmp;
  const int h = 25, w = 40;  // 1000 pixels
  const auto rgb = memopt::testing::pattern(h, w, 3);
  std::filesystem::create_directories(tmp.path / "a");
  memopt::testing::write_png(tmp / "a/x.png", rgb, h, w, 3);
  memopt::testing::write_bmp(tmp / "a/y.bmp", rgb, h, w);
  memopt::testing::write_jpeg(tmp / "a/z.jpg", rgb, h, w, 3);
  for (const char* name : {"a/x.png", "a/y.bmp", "a/z.jpg"}) {
    CAPTURE(name);
    const img::LoadOptions at{.height = 16, .width = 16, .max_pixels = 1000};
    std::vector<std::uint8_t> out(at.bytes());
    CHECK_NOTHROW(img::load_into(tmp / name, at, out));
    img::LoadOptions over = at;
    over.max_pixels = 999;
    const std::string message = error_of([&] { img::load_into(tmp / name, over, out); });
    CAPTURE(message);
    CHECK(has(message, "expected at most 999 pixels"));
    CHECK(has(message, "found 25 x 40 = 1000 pixels"));
    // And on bytes, at full size.
    const auto bytes = read_all(tmp / name);
    CHECK(img::decode(bytes, img::ColorMode::rgb, 0, 0, 1000).pixels.size() == rgb.size());
    CHECK(has(error_of([&] { (void)img::decode(bytes, img::ColorMode::rgb, 0, 0, 999); }),
              "expected at most 999 pixels"));
  }
  // image_directory's decode stage passes its option down: all three skipped at 999.
  for (const std::uint64_t limit : {std::uint64_t{999}, std::uint64_t{1000}}) {
    CAPTURE(limit);
    const auto dir = memopt::data::image_directory(
        tmp.path,
        {.image_size = {16, 16}, .on_error = memopt::data::OnError::skip, .max_pixels = limit});
    REQUIRE(dir.size() == 3);
    std::size_t decoded = 0;
    for (const auto& image : dir | dir.decode()) decoded += image.pixels.empty() ? 0 : 1;
    CHECK(decoded == (limit == 1000 ? 3 : 0));
    CHECK(dir.skipped() == (limit == 1000 ? 0 : 3));
    for (const std::string& reason : dir.decoder().skip_reasons()) {
      CHECK(has(reason, "expected at most 999 pixels"));
    }
  }
}

namespace {

// Pillow's reading of a CMYK JPEG's samples (c, m, y, k as stored, Adobe's inverted
// convention): R = (255 - K) - (255 - K) C / 255 with ink C = 255 - c, K = 255 - k, rounded.
std::vector<std::uint8_t> pillow_rgb_of_cmyk(const std::vector<std::uint8_t>& cmyk) {
  std::vector<std::uint8_t> rgb;
  for (std::size_t i = 0; i < cmyk.size(); i += 4) {
    const int k = cmyk[i + 3];
    for (int c = 0; c < 3; ++c) {
      const int ink = 255 - cmyk[i + c];
      rgb.push_back(static_cast<std::uint8_t>(k - static_cast<int>(std::lround(ink * k / 255.0))));
    }
  }
  return rgb;
}

std::vector<std::uint8_t> luma_of(const std::vector<std::uint8_t>& rgb) {
  std::vector<std::uint8_t> grey;
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    grey.push_back(static_cast<std::uint8_t>(
        std::lround(rgb[i] * 0.299 + rgb[i + 1] * 0.587 + rgb[i + 2] * 0.114)));
  }
  return grey;
}

}  // namespace

TEST_CASE("a CMYK or YCCK JPEG decodes to the RGB Pillow reads") {
  SUBCASE("YCCK from TurboJPEG, with Adobe's marker, its samples inverted as Photoshop's") {
    TempDir tmp;
    const int h = 24, w = 32;
    const auto cmyk = memopt::testing::pattern(h, w, 4, 3);
    const auto jpeg = memopt::testing::jpeg_bytes(cmyk, h, w, TJPF_CMYK, 100);
    // APP14 "Adobe" right after SOI, transform 2 (YCCK).
    REQUIRE(jpeg.size() > 20);
    CHECK(jpeg[2] == 0xFF);
    CHECK(jpeg[3] == 0xEE);
    CHECK(std::string(jpeg.begin() + 6, jpeg.begin() + 11) == "Adobe");
    CHECK(jpeg[17] == 2);
    CHECK(img::jpeg_info(jpeg).cmyk);

    const auto want = pillow_rgb_of_cmyk(cmyk);
    const auto got = img::decode_jpeg(jpeg, img::ColorMode::rgb);
    REQUIRE(got.height == h);
    REQUIRE(got.width == w);
    const Diff d = compare(got.pixels, want);
    MESSAGE("YCCK q100 against Pillow's formula on the source: mean |diff| ", d.mean, ", max ",
            d.max);
    CHECK(d.mean < 1.0);
    CHECK(d.max <= 4);
    const Diff g = compare(img::decode_jpeg(jpeg, img::ColorMode::grayscale).pixels, luma_of(want));
    CHECK(g.mean < 1.0);
    CHECK(g.max <= 4);
    // load_into, decoding straight into its buffer (the target is the image's size) and at a
    // DCT scale (half of it) before a resize.
    memopt::testing::write_bytes(tmp / "cmyk.jpg", jpeg.data(), jpeg.size());
    const img::LoadOptions whole{.height = h, .width = w};
    std::vector<std::uint8_t> out(whole.bytes());
    img::load_into(tmp / "cmyk.jpg", whole, out);
    CHECK(same(out, got.pixels));
    const auto half = img::decode_jpeg(jpeg, img::ColorMode::rgb, h / 2, w / 2);
    CHECK(half.height == h / 2);
    CHECK(half.width == w / 2);
  }
  SUBCASE("CMYK as Pillow writes it (Adobe's marker, no transform), against Pillow's pixels") {
    const auto jpeg = read_all(kImages / "src_cmyk.jpg");
    CHECK(img::jpeg_info(jpeg).cmyk);
    const auto rgb = img::decode_jpeg(jpeg, img::ColorMode::rgb);
    CHECK(rgb.height == 30);
    CHECK(rgb.width == 40);
    const Diff d = compare(rgb.pixels, read_all(kImages / "ref_cmyk_rgb.u8"));
    const Diff g = compare(img::decode_jpeg(jpeg, img::ColorMode::grayscale).pixels,
                           read_all(kImages / "ref_cmyk_gray.u8"));
    MESSAGE("CMYK against Pillow: RGB mean |diff| ", d.mean, ", max ", d.max, "; L mean ", g.mean,
            ", max ", g.max);
    CHECK(d.max <= 1);
    CHECK(g.max <= 1);
  }
}
