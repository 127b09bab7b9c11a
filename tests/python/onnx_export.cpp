// The C++ half of the ONNX export test (test_onnx.py drives it).
//
//   memopt_onnx_export DIR   trains a few models briefly, exports each as DIR/NAME.onnx
//                            (float32) and DIR/NAME_f16.onnx (float16), and writes 256 inputs
//                            (NAME_inputs.f32) and memopt's predictions on them
//                            (NAME_predict.f32), raw little-endian float32, plus one line per
//                            model in DIR/models.txt: NAME INPUT_DIMS... : OUTPUTS
//
// The models cover every layer and activation the exporter knows, with Keras's `same` and
// `valid` padding, strides, rectangular windows, and both places a transpose can go.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

template <class P>
using ConvNetOf =
    mo::Model<mo::Sequential<mo::Rescaling<std::ratio<1, 255>, std::ratio<-1, 2>>,
                             mo::Conv2D<8, 3, 1, mo::same, mo::ReLU>, mo::BatchNormalization,
                             mo::MaxPooling2D<2>, mo::Conv2D<8, 3, 2, mo::valid, mo::Tanh>,
                             mo::AveragePooling2D<2, 1, mo::same>, mo::Dropout<std::ratio<1, 2>>,
                             mo::Flatten, mo::Dense<16, mo::ReLU>, mo::Dense<5, mo::Softmax>>,
              mo::Input<12, 12, 3>, P>;

using Windows = mo::Model<
    mo::Sequential<mo::Conv2D<6, mo::KernelSize<3, 2>, mo::Strides<2, 1>, mo::same, mo::ReLU>,
                   mo::AveragePooling2D<2, 1, mo::same>, mo::BatchNormalization,
                   mo::MaxPooling2D<3, 2, mo::same>, mo::Conv2D<4, 1>, mo::GlobalAveragePooling2D,
                   mo::Dense<3, mo::Softmax>>,
    mo::Input<9, 9, 2>>;

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
         std::ofstream& manifest) {
  constexpr std::size_t n = M::spec::inputs, classes = M::spec::outputs;
  const auto inputs = [&](std::size_t rows, float phase) {
    std::vector<float> x(rows * n);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = scale * (0.5f + 0.5f * std::sin(0.37f * float(i) + phase));
    return x;
  };
  std::vector<float> x = inputs(128, 0.0f);
  std::vector<std::int32_t> y(128);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t((i * 7) % classes);
  model.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
  model.fit(mo::data::from(std::move(x), std::move(y), n) | mo::data::batch(32),
            {.epochs = 2, .verbose = 0});

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
    ConvNetOf<mo::mixed_float16> mixed{10};
    run(mixed, dir, "convnet_mixed_float16", 255.0f, manifest);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
