// A short Fashion-MNIST training through Model<..., mo::cuda> reaches the CPU backend's
// accuracy: the whole path (data, fit, evaluate, the CUDA graph of each step) end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("MEMOPT_FASHION_MNIST")) return env;
  return "/usr/share/datasets/fashion-mnist";
}

template <class Policy, class Backend>
double test_accuracy(const mo::data::TrainTest& data, int epochs) {
  mo::Model<Net, mo::Input<784>, Policy, Backend> model{42};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  model.fit(data.train | mo::data::batch(32), {.epochs = epochs, .verbose = 0});
  return model.evaluate(data.test | mo::data::batch(256)).accuracy;
}

}  // namespace

// Evaluated when the test registers: without the dataset (set MEMOPT_FASHION_MNIST to its
// directory, or apt install dataset-fashion-mnist) doctest reports the test as skipped.
TEST_CASE("Fashion-MNIST: two epochs on the GPU reach the CPU's test accuracy" *
          doctest::skip(!std::filesystem::exists(data_dir()))) {
  const std::filesystem::path dir = data_dir();
  const mo::data::TrainTest data = mo::data::fashion_mnist(dir);
  const double cpu = test_accuracy<mo::float32, mo::cpu>(data, 2);
  const double gpu32 = test_accuracy<mo::float32, mo::cuda>(data, 2);
  const double gpu16 = test_accuracy<mo::mixed_float16, mo::cuda>(data, 2);
  MESSAGE("test accuracy after 2 epochs: cpu " << cpu << ", cuda float32 " << gpu32
                                               << ", cuda mixed_float16 " << gpu16);
  CHECK(cpu > 0.82);
  CHECK(std::abs(gpu32 - cpu) < 0.01);
  CHECK(std::abs(gpu16 - cpu) < 0.015);
}
