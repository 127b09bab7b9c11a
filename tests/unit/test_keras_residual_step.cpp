// One training step of memopt against real Keras's on the residual block of Keras's "Image
// classification from scratch" tutorial (issue 38): SeparableConv2D, BatchNormalization and
// Activation layers, a strided 1x1 Conv2D shortcut and an Add, from the same weights and batch.
// tests/data/keras/make_keras_residual_step.py wrote what Keras 3.15.1 (TensorFlow 2.21, CPU)
// did: the weights before and after one train_on_batch with SGD(0.1), the batch and its loss.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <memopt/io/safetensors.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;
using mo::testing::relative_error;

namespace {

using TutorialBlock =
    mo::Residual<mo::Sequential<mo::Activation<mo::ReLU>, mo::SeparableConv2D<8, 3, mo::Same>,
                                mo::BatchNormalization, mo::Activation<mo::ReLU>,
                                mo::SeparableConv2D<8, 3, mo::Same>, mo::BatchNormalization,
                                mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>,
                 mo::Conv2D<8, 1, mo::Strides<2>, mo::Same>>;
using Net =
    mo::Sequential<mo::Conv2D<4, 3, mo::Strides<2>, mo::Same>, mo::BatchNormalization,
                   mo::Activation<mo::ReLU>, TutorialBlock, mo::SeparableConv2D<8, 3, mo::Same>,
                   mo::BatchNormalization, mo::Activation<mo::ReLU>, mo::GlobalAveragePooling2D,
                   mo::Dense<3, mo::Softmax>>;
using In = mo::Input<12, 12, 3>;

// The committed files, or those the test python.keras_weights has real Keras make afresh.
fs::path keras_dir() {
  if (const char* d = std::getenv("MEMOPT_KERAS_DATA"); d && *d) return d;
  return fs::path(MEMOPT_TEST_DATA_DIR) / "keras";
}

std::vector<float> difference(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

}  // namespace

TEST_CASE("one SGD step on the tutorial's residual block is Keras's train_on_batch") {
  const auto batch = mo::io::SafetensorsFile::read(keras_dir() / "residual_step.batch.safetensors");
  const auto before = mo::io::SafetensorsFile::read(keras_dir() / "residual_step.safetensors");
  const auto keras_after =
      mo::io::SafetensorsFile::read(keras_dir() / "residual_step.after.safetensors");
  const std::vector<float> x = batch.floats("x");
  std::vector<std::int32_t> y;
  for (const float c : batch.floats("y")) y.push_back(static_cast<std::int32_t>(c));
  const double keras_loss = batch.floats("loss").at(0);
  const std::size_t n = In::shape.size();
  REQUIRE(x.size() == y.size() * n);

  mo::Model<Net, In, mo::float32> model{0};
  model.load_weights(keras_dir() / "residual_step.safetensors");
  model.compile(mo::SGD{{.learning_rate = 0.1}}, mo::SparseCategoricalCrossentropy{});
  const auto h =
      model.fit(mo::data::from(x, y, n) | mo::data::batch(y.size()), {.epochs = 1, .verbose = 0});
  const double loss = h.history.at("loss").at(0);

  mo::testing::TempDir dir;
  model.save_weights(dir / "after.safetensors");
  const auto after = mo::io::SafetensorsFile::read(dir / "after.safetensors");

  // Each weight's change in the step, memopt's against Keras's: the gradient times the rate,
  // and for the moving statistics a hundredth of the batch's statistic minus the old value.
  // The changes, not the weights after, so that the weights the two share do not hide them.
  CHECK(after.tensors().size() == keras_after.tensors().size());
  CHECK(keras_after.tensors().size() == 31);
  std::vector<double> ours_all, keras_all;
  double worst = 0;
  std::string worst_name;
  for (const auto& t : keras_after.tensors()) {
    CAPTURE(t.name);
    REQUIRE(after.find(t.name) != nullptr);
    const auto start = before.floats(t.name);
    const auto ours = difference(after.floats(t.name), start);
    const auto theirs = difference(keras_after.floats(t.name), start);
    ours_all.insert(ours_all.end(), ours.begin(), ours.end());
    keras_all.insert(keras_all.end(), theirs.begin(), theirs.end());
  }
  const double all = relative_error(ours_all, keras_all);
  // A bias that a BatchNormalization follows has no gradient in exact arithmetic (the mean it
  // adds is subtracted again): Keras's change is 0 and memopt's must be rounding beside the
  // rest of the step. Every other weight's change on its own, by relative L2.
  double step_norm = 0;
  for (const double v : keras_all) step_norm += v * v;
  step_norm = std::sqrt(step_norm);
  std::size_t zero_gradients = 0;
  for (const auto& t : keras_after.tensors()) {
    CAPTURE(t.name);
    const auto start = before.floats(t.name);
    const auto ours = difference(after.floats(t.name), start);
    const auto theirs = difference(keras_after.floats(t.name), start);
    double theirs_norm = 0, ours_norm = 0;
    for (std::size_t i = 0; i < theirs.size(); ++i)
      theirs_norm += double(theirs[i]) * theirs[i], ours_norm += double(ours[i]) * ours[i];
    if (theirs_norm == 0) {
      ++zero_gradients;
      CHECK(t.name.ends_with("/bias"));
      CHECK(std::sqrt(ours_norm) < 1e-6 * step_norm);
      continue;
    }
    // A change far smaller than the weight it moves is known only to the weight's rounding:
    // each side rounds the weight after the step to float32 (half an ulp, 2^-24 relative), so
    // the two changes may differ by an ulp of the weight wherever they are not otherwise off.
    const auto weights = keras_after.floats(t.name);
    double weight_norm = 0;
    for (const float w : weights) weight_norm += double(w) * w;
    const double e = relative_error(ours, theirs);
    CAPTURE(e);
    CHECK(e * std::sqrt(theirs_norm) <=
          1e-5 * std::sqrt(theirs_norm) + 0x1p-23 * std::sqrt(weight_norm));
    if (e > worst) worst = e, worst_name = t.name;
  }
  CHECK(zero_gradients == 4);
  MESSAGE("loss: memopt " << loss << ", Keras " << keras_loss << " (relative "
                          << std::abs(loss - keras_loss) / keras_loss << "); the step's change "
                          << "over all 31 weights: " << all << " relative L2; the worst weight, "
                          << worst_name << ": " << worst << " (" << zero_gradients
                          << " biases before a BatchNormalization: Keras's change 0)");
  CHECK(std::abs(loss - keras_loss) < 1e-5 * keras_loss);
  CHECK(all < 1e-5);
}
