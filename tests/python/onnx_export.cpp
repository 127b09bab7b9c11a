// The C++ half of the ONNX export test (test_onnx.py drives it).
//
//   memopt_onnx_export DIR   trains a few models briefly, exports each as DIR/NAME.onnx
//                            (float32) and DIR/NAME_f16.onnx (float16), and writes 256 inputs
//                            (NAME_inputs.f32) and memopt's predictions on them
//                            (NAME_predict.f32), raw little-endian float32, plus one line per
//                            model in DIR/models.txt: NAME INPUT_DIMS... : OUTPUTS
//
// The models cover every layer and activation the exporter knows, with Keras's `same` and
// `valid` padding, strides, rectangular windows, and both places a transpose can go; and the
// model type of every program under examples/, each trained as its example trains it (loss,
// policy) on synthetic data.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ratio>
#include <string>
#include <vector>

#include <memopt/io/onnx.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using Mlp = mo::Model<
    mo::Sequential<mo::Dense<32, mo::ReLU>, mo::Dropout<std::ratio<1, 5>>, mo::Dense<16, mo::Tanh>,
                   mo::Dense<16, mo::GELU>, mo::Dense<8, mo::Sigmoid>, mo::BatchNormalization,
                   mo::Dense<12, mo::Recompute<mo::ReLU>>, mo::Dense<4, mo::Softmax>>,
    mo::Input<10>>;

// Residual blocks: the image-classification tutorial's (a strided 1x1 convolution as the
// shortcut, whose input may be in the other layout), an identity one on images and one on
// vectors.
using Residuals = mo::Model<
    mo::Sequential<
        mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<6, 3, mo::Strides<2>, mo::Same>,
        mo::BatchNormalization, mo::Activation<mo::ReLU>,
        mo::Residual<
            mo::Sequential<mo::Activation<mo::ReLU>, mo::SeparableConv2D<8, 3, mo::Same>,
                           mo::BatchNormalization, mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>,
            mo::Conv2D<8, 1, mo::Strides<2>, mo::Same>>,
        mo::Residual<
            mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Conv2D<8, 3, mo::Same>>>,
        mo::GlobalAveragePooling2D, mo::Residual<mo::Dense<8, mo::Tanh>>,
        mo::Dense<4, mo::Softmax>>,
    mo::Input<12, 12, 3>>;

// RandomCrop, whose inference is Keras's centred crop: the 10 x 9 input's centred 10 x 6
// window (the crop's 3:2 ratio) resized to 6 x 4 (Slice, Resize), then after a Conv2D a
// Slice on NCHW (6 x 4 to 5 x 4: no resize).
using Cropped = mo::Model<mo::Sequential<mo::RandomCrop<6, 4>, mo::Rescaling<std::ratio<1, 255>>,
                                         mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::RandomCrop<5, 4>,
                                         mo::Flatten, mo::Dense<3, mo::Softmax>>,
                          mo::Input<10, 9, 3>>;

template <class P>
using ConvNetOf = mo::Model<
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>, std::ratio<-1, 2>>,
                   mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                   mo::MaxPooling2D<2>, mo::Conv2D<8, 3, mo::Strides<2>, mo::Tanh>,
                   mo::AveragePooling2D<2, mo::Strides<1>, mo::Same>, mo::Dropout<std::ratio<1, 2>>,
                   mo::Flatten, mo::Dense<16, mo::ReLU>, mo::Dense<5, mo::Softmax>>,
    mo::Input<12, 12, 3>, P>;

using Windows = mo::Model<
    mo::Sequential<mo::Conv2D<6, mo::KernelSize<3, 2>, mo::Strides<2, 1>, mo::Same, mo::ReLU>,
                   mo::AveragePooling2D<2, mo::Strides<1>, mo::Same>, mo::BatchNormalization,
                   mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>, mo::Conv2D<4, 1>,
                   mo::GlobalAveragePooling2D, mo::Dense<3, mo::Softmax>>,
    mo::Input<9, 9, 2>>;

// Depthwise convolutions (a multiplier, strides, a non-square kernel), a separable one and
// augmentation layers,
// which export no node.
using Depthwise = mo::Model<mo::Sequential<mo::RandomFlip<>, mo::RandomContrast<std::ratio<1, 5>>,
                                           mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                                           mo::DepthwiseConv2D<3, mo::Strides<2>, mo::Same,
                                                               mo::DepthMultiplier<2>, mo::ReLU>,
                                           mo::DepthwiseConv2D<mo::KernelSize<3, 2>, mo::Tanh>,
                                           mo::SeparableConv2D<5, 3, mo::Same, mo::ReLU>,
                                           mo::GlobalAveragePooling2D, mo::Dense<3, mo::Softmax>>,
                            mo::Input<10, 9, 3>>;

// The examples' model types, copied from their main.cpp (keep them in step):
// examples/01_fashion_mnist (and 05_data_parallel's Mlp): the guide's MLP.
using Example01 =
    mo::Model<mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>, mo::Input<784>>;
// examples/02_fashion_mnist_cnn (and 05_data_parallel's Convnet): Keras's simple MNIST convnet.
using Example02 = mo::Model<
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 3, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>,
    mo::Input<28, 28, 1>>;
// The plain convnet examples/03_image_folder trained before Keras's tutorial model, under
// mixed_bfloat16.
using Example03 =
    mo::Model<mo::Sequential<mo::Rescaling<std::ratio<1, 255>>,
                             mo::Conv2D<16, 3, mo::Strides<2>, mo::Same, mo::ReLU>,
                             mo::MaxPooling2D<2>, mo::Conv2D<32, 3, mo::Same, mo::ReLU>,
                             mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::Same, mo::ReLU>,
                             mo::GlobalAveragePooling2D, mo::Dense<10, mo::Softmax>>,
              mo::Input<128, 128, 3>, mo::mixed_bfloat16>;
// examples/04_regression: the regression MLP (mean squared error, one output).
using Example04 =
    mo::Model<mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<1>>,
              mo::Input<10>>;

void write_floats(const fs::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  if (!out) throw mo::error("cannot write " + p.string());
}

// Trains `model` for a few steps on synthetic data (so that BatchNormalization's moving
// statistics and every weight move away from their initial values), exports it, and writes
// its predictions on 256 further inputs.
template <class M>
void run(M& model, const fs::path& dir, const std::string& name, float scale,
         std::ofstream& manifest, bool regression = false) {
  constexpr std::size_t n = M::spec::inputs, classes = M::spec::outputs;
  const auto inputs = [&](std::size_t rows, float phase) {
    std::vector<float> x(rows * n);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = scale * (0.5f + 0.5f * std::sin(0.37f * float(i) + phase));
    return x;
  };
  std::vector<float> x = inputs(128, 0.0f);
  if (regression) {
    std::vector<float> y(128);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[i * n] - 2.0f * x[i * n + 1];
    model.compile(mo::Adam{{.learning_rate = 0.01}}, mo::MeanSquaredError{});
    model.fit(mo::data::from(std::move(x), std::move(y), n, 1) | mo::data::batch(32),
              {.epochs = 2, .verbose = 0});
  } else {
    std::vector<std::int32_t> y(128);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t((i * 7) % classes);
    model.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
    model.fit(mo::data::from(std::move(x), std::move(y), n) | mo::data::batch(32),
              {.epochs = 2, .verbose = 0});
  }

  mo::save_onnx(model, dir / (name + ".onnx"));
  mo::save_onnx(model, dir / (name + "_f16.onnx"), {.precision = mo::OnnxPrecision::float16});
  const std::vector<float> test = inputs(256, 1.3f);
  write_floats(dir / (name + "_inputs.f32"), test);
  write_floats(dir / (name + "_predict.f32"), model.predict(test));

  constexpr mo::Shape in = M::spec::shapes[0];
  manifest << name;
  for (std::size_t i = 0; i < in.rank; ++i) manifest << ' ' << in.dims[i];
  manifest << " : " << classes << ' ' << M::policy::name << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    std::ofstream manifest(dir / "models.txt");
    Mlp mlp{7};
    run(mlp, dir, "mlp", 2.0f, manifest);
    ConvNetOf<mo::float32> convnet{8};
    run(convnet, dir, "convnet", 255.0f, manifest);
    Windows windows{9};
    run(windows, dir, "windows", 1.0f, manifest);
    Depthwise depthwise{15};
    run(depthwise, dir, "depthwise", 255.0f, manifest);
    Residuals residuals{16};
    run(residuals, dir, "residuals", 255.0f, manifest);
    Cropped cropped{17};
    run(cropped, dir, "random_crop", 255.0f, manifest);
    ConvNetOf<mo::mixed_float16> mixed{10};
    run(mixed, dir, "convnet_mixed_float16", 255.0f, manifest);
    // Large models: on the heap.
    const auto example01 = std::make_unique<Example01>(11);
    run(*example01, dir, "example01_fashion_mnist", 1.0f, manifest);  // pixels in [0, 1]
    const auto example02 = std::make_unique<Example02>(12);
    run(*example02, dir, "example02_fashion_mnist_cnn", 255.0f, manifest);
    const auto example03 = std::make_unique<Example03>(13);
    run(*example03, dir, "example03_image_folder", 255.0f, manifest);
    const auto example04 = std::make_unique<Example04>(14);
    run(*example04, dir, "example04_regression", 1.0f, manifest, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
