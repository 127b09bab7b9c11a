// 8-bit pixels all the way to the model: fit, evaluate and predict read data::ImageBatch (uint8
// [rows, h, w, c] and int32 labels) beside float batches. The CPU backend converts the bytes to
// its compute type as it loads the input buffer, and the model sees 0..255 as Keras's does, so
// a Rescaling layer first scales them. Every run here is compared with the same pixels given
// as float batches.
#include <doctest/doctest.h>

#include <cstdint>
#include <ratio>
#include <string>
#include <vector>

#include <memopt/data/image_batch.hpp>
#include <memopt/data/image_dataset.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

static_assert(mo::data::LabeledPixelBatch<mo::data::ImageBatch>);
static_assert(mo::data::TrainingBatch<mo::data::ImageBatch>);
static_assert(!mo::data::LabeledBatch<mo::data::ImageBatch>,
              "an ImageBatch has no float features: fit reads its pixels");
static_assert(mo::data::TrainingBatch<mo::data::BatchRef> &&
              mo::data::TrainingBatch<mo::data::PixelBatchRef>);

namespace {

// A small convnet that scales its 8-bit input itself; Dropout makes the step's random stream
// part of what must agree.
using PixelCnn =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Flatten, mo::Dropout<std::ratio<1, 4>>,
                   mo::Dense<5, mo::Softmax>>;
// A convnet without Dropout (whose stream depends on the node's index), with and without
// Rescaling: the second reads floats already scaled to [0, 1].
using RescaledCnn =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<5, mo::Softmax>>;
using ScaledCnn = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>,
                                 mo::Flatten, mo::Dense<5, mo::Softmax>>;
using PixelMlp = mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Dense<16, mo::ReLU>,
                                mo::Dense<5, mo::Softmax>>;

constexpr std::size_t kSide = 8;
constexpr std::size_t kCount = 90;  // batches of 32: two full, one of 26 rows

// Images whose class decides where a bright square sits, on noise: learnable, never all zero.
mo::data::ImageDataset pixel_images(std::size_t count, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<std::uint8_t> pixels(count * kSide * kSide);
  std::vector<std::int32_t> labels(count);
  for (std::size_t n = 0; n < count; ++n) {
    const auto label = static_cast<std::int32_t>(n % 5);
    labels[n] = label;
    for (std::size_t y = 0; y < kSide; ++y)
      for (std::size_t x = 0; x < kSide; ++x) {
        const bool lit = y / 4 == std::size_t(label) % 2 && x / 2 == std::size_t(label) % 4;
        const float v = rng.uniform(0.0f, lit ? 255.0f : 120.0f);
        pixels[(n * kSide + y) * kSide + x] = static_cast<std::uint8_t>(v);
      }
  }
  return mo::data::ImageDataset(std::move(pixels), std::move(labels), kSide, kSide, 1);
}

// The same images as float rows, each value divided by `divisor` (1: the raw 0..255; 255 as
// data::fashion_mnist scales).
mo::data::Dataset as_floats(const mo::data::ImageDataset& images, float divisor) {
  std::vector<float> features(images.pixels().size());
  for (std::size_t i = 0; i < features.size(); ++i)
    features[i] = static_cast<float>(images.pixels()[i]) / divisor;
  return mo::data::from(std::move(features),
                        std::vector<std::int32_t>(images.labels().begin(), images.labels().end()),
                        images.image_size());
}

template <class M>
void compile(M& m) {
  m.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
            mo::metrics::Accuracy{});
}

// Fits, evaluates and predicts the same pixels as bytes and as raw floats on two models of
// one seed, and requires every number to be the same bit for bit.
template <class Net, class In, class Policy>
void check_bytes_match_floats() {
  const auto images = pixel_images(kCount, 7);
  const auto floats = as_floats(images, 1.0f);
  mo::Model<Net, In, Policy> from_bytes{3}, from_floats{3};
  compile(from_bytes);
  compile(from_floats);

  const auto h8 =
      from_bytes.fit(images | mo::data::shuffle(kCount, 1) | mo::data::batch(32),
                     {.epochs = 3, .validation_data = images | mo::data::batch(40), .verbose = 0});
  const auto hf =
      from_floats.fit(floats | mo::data::shuffle(kCount, 1) | mo::data::batch(32),
                      {.epochs = 3, .validation_data = floats | mo::data::batch(40), .verbose = 0});
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    CAPTURE(key);
    CHECK(h8.history.at(key) == hf.history.at(key));
  }
  // It learned something, so the comparison is not of two idle models.
  CHECK(h8.history.at("loss").back() < h8.history.at("loss").front());
  CHECK(from_bytes.get_weights() == from_floats.get_weights());

  const mo::Evaluation e8 = from_bytes.evaluate(images | mo::data::batch(32));
  const mo::Evaluation ef = from_floats.evaluate(floats | mo::data::batch(32));
  CHECK(e8.loss == ef.loss);
  CHECK(e8.accuracy == ef.accuracy);

  const std::vector<float> p8 = from_bytes.predict(images | mo::data::batch(64));
  const std::vector<float> pf = from_floats.predict(floats | mo::data::batch(64));
  REQUIRE(p8.size() == kCount * 5);
  CHECK(p8 == pf);
}

}  // namespace

TEST_CASE("8-bit images train, evaluate and predict bit for bit as the same values in floats") {
  // The bytes become exactly the floats 0..255 (in every compute type: 255 fits the 8-bit
  // significand of bfloat16), so both models run the same arithmetic on the same values.
  SUBCASE("a convnet under float32") {
    check_bytes_match_floats<PixelCnn, mo::Input<kSide, kSide, 1>, mo::float32>();
  }
  SUBCASE("a convnet under mixed_bfloat16") {
    check_bytes_match_floats<PixelCnn, mo::Input<kSide, kSide, 1>, mo::mixed_bfloat16>();
  }
  SUBCASE("a Dense-only model reads images through Input<64>") {
    check_bytes_match_floats<PixelMlp, mo::Input<kSide * kSide>, mo::float32>();
  }
}

TEST_CASE("Rescaling on 8-bit images matches floats scaled beforehand, within float rounding") {
  // x * float(1/255) and x / 255.0f differ by at most one rounding, so the runs agree to about
  // 1e-7 relative error (measured: 7e-8 on predict, 9e-8 on the weights after two epochs).
  const auto images = pixel_images(kCount, 11);
  const auto scaled = as_floats(images, 255.0f);
  mo::Model<RescaledCnn, mo::Input<kSide, kSide, 1>> from_bytes{5};
  mo::Model<ScaledCnn, mo::Input<kSide, kSide, 1>> from_floats{5};
  REQUIRE(from_bytes.get_weights() == from_floats.get_weights());  // Rescaling has no weights
  compile(from_bytes);
  compile(from_floats);

  const auto p8 = from_bytes.predict(images | mo::data::batch(32));
  const auto pf = from_floats.predict(scaled | mo::data::batch(32));
  CHECK(relative_error(p8, pf) < 1e-6);

  from_bytes.fit(images | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  from_floats.fit(scaled | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  CHECK(relative_error(from_bytes.get_weights(), from_floats.get_weights()) < 1e-5);
  const mo::Evaluation e8 = from_bytes.evaluate(images | mo::data::batch(32));
  const mo::Evaluation ef = from_floats.evaluate(scaled | mo::data::batch(32));
  CHECK(e8.loss == doctest::Approx(ef.loss).epsilon(1e-5));
}

TEST_CASE("images whose shape is not the model's Input raise memopt::error naming both") {
  const auto images = pixel_images(10, 3);  // 8 x 8 x 1
  mo::Model<PixelMlp, mo::Input<784>> mlp{1};
  compile(mlp);
  const std::string mlp_says =
      "the model's Input has 784 features, the batch's images have 8 x 8 x 1 = 64 values";
  CHECK_THROWS_WITH_AS(mlp.fit(images | mo::data::batch(5), {.verbose = 0}),
                       ("fit: " + mlp_says).c_str(), mo::error);
  CHECK_THROWS_WITH_AS(mlp.evaluate(images | mo::data::batch(5)), ("evaluate: " + mlp_says).c_str(),
                       mo::error);
  CHECK_THROWS_WITH_AS(mlp.predict(images | mo::data::batch(5)), ("predict: " + mlp_says).c_str(),
                       mo::error);

  // An image Input compares height, width and channels, not only their product.
  mo::Model<PixelCnn, mo::Input<4, 16, 1>> cnn{1};
  compile(cnn);
  CHECK_THROWS_WITH_AS(
      cnn.fit(images | mo::data::batch(5), {.verbose = 0}),
      "fit: the model's Input is 4 x 16 x 1, the batch's images are 8 x 8 x 1 "
      "(decode at the model's shape: data::image_directory<Model>, data::image_options_for<Model>)",
      mo::error);
  // Validation data is checked as evaluate's.
  const mo::data::ImageDataset wide(
      std::vector<std::uint8_t>(images.pixels().begin(), images.pixels().end()),
      std::vector<std::int32_t>(images.labels().begin(), images.labels().end()), 4, 16, 1);
  CHECK_THROWS_WITH_AS(
      cnn.fit(wide | mo::data::batch(5),
              {.validation_data = images | mo::data::batch(5), .verbose = 0}),
      "evaluate: the model's Input is 4 x 16 x 1, the batch's images are 8 x 8 x 1 "
      "(decode at the model's shape: data::image_directory<Model>, data::image_options_for<Model>)",
      mo::error);
  CHECK(cnn.completed_epochs() == 0);
}
