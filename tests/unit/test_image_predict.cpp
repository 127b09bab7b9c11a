// predict for one image (issue 41): from a file, a decoded image, a pipeline's LabeledImage or
// ImageView, and an ImageBatch, each the same as its row of a batched predict; and the model's
// Input as the single source of the decoded size (image_options_for, image_directory<Model>).

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ratio>
#include <string>
#include <vector>

#include <memopt/data/image_directory.hpp>
#include <memopt/memopt.hpp>

#include "image_files.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using Net = mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                           mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<2, mo::Softmax>>;
using M = mo::Model<Net, mo::Input<16, 16, 3>>;
constexpr std::size_t kOutputs = 2;

// Two classes of 4 files each, of other sizes than the model's (so every file is resized) and
// of every format: "dark" patterns scaled to [0, 128), "bright" ones to [128, 256); never zero.
struct Folder {
  mo::testing::TempDir tmp;

  Folder() {
    using namespace mo::testing;
    for (const char* c : {"bright", "dark"}) fs::create_directories(tmp.path / c);
    for (int i = 0; i < 4; ++i) {
      for (const bool bright : {false, true}) {
        const int h = 20 + 4 * i, w = 30 - 2 * i;
        std::vector<std::uint8_t> px = pattern(h, w, 3, i + (bright ? 10 : 0));
        for (std::uint8_t& v : px) v = static_cast<std::uint8_t>(v / 2 + (bright ? 128 : 1));
        const fs::path stem = tmp.path / (bright ? "bright" : "dark") / ("f" + std::to_string(i));
        if (i % 3 == 0) write_jpeg(stem.string() + ".jpg", px, h, w, 3);
        if (i % 3 == 1) write_png(stem.string() + ".png", px, h, w, 3);
        if (i % 3 == 2) write_bmp(stem.string() + ".bmp", px, h, w);
      }
    }
  }
};

std::vector<float> row(const std::vector<float>& all, std::size_t r) {
  return {all.begin() + static_cast<std::ptrdiff_t>(r * kOutputs),
          all.begin() + static_cast<std::ptrdiff_t>((r + 1) * kOutputs)};
}

// One image's outputs against its row of a batch of 3 (oneDNN may block a batch of 1 and of 3
// differently, so equal within 1e-6 relative, not bit for bit).
void check_row(const std::vector<float>& one, const std::vector<float>& expected) {
  REQUIRE(one.size() == kOutputs);
  for (std::size_t k = 0; k < kOutputs; ++k)
    CHECK(one[k] == doctest::Approx(expected[k]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("predict for one image equals its row of a batched predict, for every overload") {
  const Folder folder;
  const mo::data::ImageDirectory dir =
      mo::data::image_directory<M>(folder.tmp.path, {.shuffle = false});
  REQUIRE(dir.size() == 8);
  M model{7};
  // Batches of 3 (3, 3, 2), as a user's predict over a directory.
  const std::vector<float> all = model.predict(dir | dir.decode() | mo::data::batch(3));
  REQUIRE(all.size() == 8 * kOutputs);
  CHECK(row(all, 0) != row(all, 5));  // the images differ, so the rows do

  mo::data::ImageBatch batch;
  for (std::size_t i = 0; i < dir.size(); ++i) {
    CAPTURE(i);
    const std::string path = dir[i].path();
    const std::vector<float> expected = row(all, i);
    // A file, decoded as the directory decodes it, and with no options (the model's shape).
    check_row(model.predict(path, dir.options()), expected);
    check_row(model.predict(fs::path(path)), expected);
    // A decoded image, as io::image's decoders return them.
    const mo::io::image::Image decoded = mo::data::load_image(path, dir.options());
    check_row(model.predict(decoded), expected);
    // A pipeline's LabeledImage.
    const mo::data::LabeledImage labeled = dir.decoder()(dir[i]);
    REQUIRE(labeled.pixels.size() == 16 * 16 * 3);
    check_row(model.predict(labeled), expected);
    // An ImageView, as image_cache hands them out.
    const mo::data::ImageView view{.pixels = labeled.pixels,
                                   .height = labeled.height,
                                   .width = labeled.width,
                                   .channels = labeled.channels};
    check_row(model.predict(view), expected);
    batch.push_back(labeled);
  }
  // An ImageBatch: every row at once, as Keras's predict on an array of images.
  const std::vector<float> whole = model.predict(batch);
  REQUIRE(whole.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    CHECK(whole[i] == doctest::Approx(all[i]).epsilon(1e-6));
}

TEST_CASE("predict for one image refuses another shape than the model's Input, naming both") {
  const Folder folder;
  M model{7};
  const fs::path file = folder.tmp.path / "dark" / "f1.png";
  // Options decoding at another size: an error, never a silent resize to the Input.
  CHECK_THROWS_WITH_AS(model.predict(file, mo::data::ImageDirectoryOptions{.image_size = {8, 8}}),
                       ("predict(" + file.string() +
                        "): the model's Input is 16 x 16 x 3, the file decodes to 8 x 8 x 3")
                           .c_str(),
                       mo::error);
  // (Assigned, not designated: ImageDirectoryOptions' fields are being put in Keras's order.)
  mo::data::ImageDirectoryOptions gray = mo::data::image_options_for<M>();
  gray.color_mode = mo::data::ColorMode::grayscale;
  CHECK_THROWS_WITH_AS(model.predict(file, gray),
                       ("predict(" + file.string() +
                        "): the model's Input is 16 x 16 x 3, the file decodes to 16 x 16 x 1")
                           .c_str(),
                       mo::error);
  const mo::io::image::Image small =
      mo::data::load_image(file, mo::data::ImageDirectoryOptions{.image_size = {8, 12}});
  CHECK_THROWS_WITH_AS(model.predict(small),
                       "predict: the model's Input is 16 x 16 x 3, the image is 8 x 12 x 3",
                       mo::error);
  mo::data::ImageBatch batch;
  batch.push_back(mo::data::LabeledImage{.pixels = {small.pixels.begin(), small.pixels.end()},
                                         .height = 8,
                                         .width = 12,
                                         .channels = 3});
  CHECK_THROWS_WITH_AS(model.predict(batch),
                       doctest::Contains("the model's Input is 16 x 16 x 3, the batch's images "
                                         "are 8 x 12 x 3"),
                       mo::error);
  // A file that is not there names the file.
  const std::string missing = (folder.tmp.path / "none.jpg").string();
  CHECK_THROWS_WITH_AS(model.predict(missing), doctest::Contains(missing.c_str()), mo::error);
}

TEST_CASE("image_options_for takes the image size and colour mode from the model's Input") {
  const mo::data::ImageDirectoryOptions rgb = mo::data::image_options_for<M>({.seed = 3});
  CHECK(rgb.image_size == std::array<int, 2>{16, 16});
  CHECK(rgb.color_mode == mo::data::ColorMode::rgb);
  CHECK(rgb.seed == 3u);  // the other options are kept
  const auto gray = mo::data::image_options_for<mo::Input<24, 20, 1>>();
  CHECK(gray.image_size == std::array<int, 2>{24, 20});
  CHECK(gray.color_mode == mo::data::ColorMode::grayscale);
  // The model's own size, written out, is accepted.
  CHECK(mo::data::image_options_for<M>({.image_size = {16, 16}}).image_size ==
        std::array<int, 2>{16, 16});

  // A size or colour mode written out that differs from the model's: both shapes named.
  CHECK_THROWS_WITH_AS(mo::data::image_options_for<M>({.image_size = {32, 32}}),
                       "data::image_options_for: the model's Input is 16 x 16 x 3, image_size "
                       "asks for 32 x 32 x 3; leave image_size out (it is taken from the model)",
                       mo::error);
  CHECK_THROWS_WITH_AS(
      mo::data::image_options_for<M>({.color_mode = mo::data::ColorMode::grayscale}),
      "data::image_options_for: the model's Input is 16 x 16 x 3, color_mode grayscale gives 1 "
      "channel(s); leave color_mode out (it is taken from the model)",
      mo::error);
  const Folder folder;
  CHECK_THROWS_WITH_AS(mo::data::image_directory<M>(folder.tmp.path, {.image_size = {8, 8}}),
                       doctest::Contains("the model's Input is 16 x 16 x 3, image_size asks for "
                                         "8 x 8 x 3"),
                       mo::error);
}

TEST_CASE("a directory decoded at the model's shape trains; one of another size is refused") {
  const Folder folder;
  M model{11};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  auto [train, val] =
      mo::data::image_directory_split<M>(folder.tmp.path, {.seed = 5, .validation_split = 0.25});
  CHECK(train.options().image_size == std::array<int, 2>{16, 16});
  const mo::History history = model.fit(
      train | train.decode() | mo::data::batch(3),
      {.epochs = 15, .validation_data = val | val.decode() | mo::data::batch(3), .verbose = 0});
  const std::vector<double>& loss = history.history.at("loss");
  REQUIRE(loss.size() == 15);
  CHECK(loss.back() < loss.front());

  // The size written twice, differently: fit names both shapes before any step.
  const mo::data::ImageDirectory wrong =
      mo::data::image_directory(folder.tmp.path, {.image_size = {8, 8}});
  M fresh{11};
  fresh.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(fresh.fit(wrong | wrong.decode() | mo::data::batch(3), {.verbose = 0}),
                       doctest::Contains("fit: the model's Input is 16 x 16 x 3, the batch's "
                                         "images are 8 x 8 x 3"),
                       mo::error);
  CHECK(fresh.completed_epochs() == 0);
}
