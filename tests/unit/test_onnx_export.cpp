// ONNX export: the graph's structure, weights and layout handling, read back from the
// ModelProto (values against ONNX Runtime are checked by tests/python/test_onnx.py).

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <ratio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <memopt/backend/cpu.hpp>
#include <memopt/io/onnx.hpp>
#include <memopt/memopt.hpp>

#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

std::vector<std::string> op_types(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.node()) ops.push_back(n.op_type());
  return ops;
}

const onnx::NodeProto& node_of(const onnx::GraphProto& g, const std::string& op, int nth = 0) {
  for (const auto& n : g.node())
    if (n.op_type() == op && nth-- == 0) return n;
  FAIL("no node " << op);
  throw;
}

const onnx::TensorProto& initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return t;
  FAIL("no initializer " << name);
  throw;
}

std::vector<std::int64_t> ints(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<float> floats(const onnx::TensorProto& t) {
  REQUIRE(t.data_type() == onnx::TensorProto::FLOAT);
  std::vector<float> v(t.raw_data().size() / sizeof(float));
  std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
  return v;
}

std::vector<std::int64_t> dims(const onnx::ValueInfoProto& v) {
  std::vector<std::int64_t> d;
  for (const auto& dim : v.type().tensor_type().shape().dim())
    d.push_back(dim.has_dim_param() ? -1 : dim.dim_value());
  return d;
}

using Mlp = mo::Model<mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dropout<std::ratio<1, 4>>,
                                     mo::Dense<8, mo::GELU>, mo::Dense<3, mo::Softmax>>,
                      mo::Input<4>>;

// 12x12x3 -> conv same 12x12x4 -> pool 6x6x4 -> conv valid stride 2 2x2x6 -> avg pool same
// 2x2x6 -> 24 -> 5.
using ConvNet =
    mo::Model<mo::Sequential<mo::Rescaling<std::ratio<1, 255>, std::ratio<-1, 2>>,
                             mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::MaxPooling2D<2>, mo::Conv2D<6, 3, mo::Strides<2>, mo::Tanh>,
                             mo::AveragePooling2D<2, mo::Strides<1>, mo::Same>,
                             mo::Dropout<std::ratio<1, 2>>, mo::Flatten, mo::Dense<5, mo::Softmax>>,
              mo::Input<12, 12, 3>>;

}  // namespace

TEST_CASE("save_onnx: a Dense MLP is Gemm nodes with Keras's kernels and no Dropout") {
  Mlp model{3};
  const onnx::ModelProto m = mo::make_onnx_model(model);
  CHECK(m.ir_version() == 8);
  REQUIRE(m.opset_import_size() == 1);
  CHECK(m.opset_import(0).version() == mo::onnx_opset);
  const onnx::GraphProto& g = m.graph();
  CHECK(op_types(g) == std::vector<std::string>{"Gemm", "Relu", "Gemm", "Mul", "Mul", "Mul", "Add",
                                                "Mul", "Tanh", "Add", "Mul", "Mul", "Gemm",
                                                "Softmax"});
  CHECK(dims(g.input(0)) == std::vector<std::int64_t>{-1, 4});
  CHECK(dims(g.output(0)) == std::vector<std::int64_t>{-1, 3});
  CHECK(g.node(g.node_size() - 1).output(0) == "output");
  CHECK(node_of(g, "Gemm").input(0) == "input");
  CHECK(attribute(node_of(g, "Softmax"), "axis")->i() == -1);

  // Gemm's B is Keras's [inputs, units] kernel unchanged.
  const auto w = model.get_weights();
  const auto& k = initializer(g, "dense/kernel");
  CHECK(std::vector<std::int64_t>(k.dims().begin(), k.dims().end()) ==
        std::vector<std::int64_t>{4, 16});
  CHECK(floats(k) == std::vector<float>(w.begin(), w.begin() + 64));
  const auto& b2 = initializer(g, "dense_2/bias");
  CHECK(b2.dims(0) == 3);
  CHECK(floats(b2) == std::vector<float>(w.end() - 3, w.end()));
}

TEST_CASE("save_onnx: a convnet transposes to NCHW once and back once, before Flatten") {
  ConvNet model{5};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) == std::vector<std::string>{"Mul", "Add", "Transpose", "Conv", "Relu",
                                                "BatchNormalization", "MaxPool", "Conv", "Tanh",
                                                "AveragePool", "Transpose", "Flatten", "Gemm",
                                                "Softmax"});
  CHECK(dims(g.input(0)) == std::vector<std::int64_t>{-1, 12, 12, 3});
  CHECK(ints(node_of(g, "Transpose", 0), "perm") == std::vector<std::int64_t>{0, 3, 1, 2});
  CHECK(ints(node_of(g, "Transpose", 1), "perm") == std::vector<std::int64_t>{0, 2, 3, 1});

  const auto& conv = node_of(g, "Conv", 0);
  CHECK(ints(conv, "kernel_shape") == std::vector<std::int64_t>{3, 3});
  CHECK(ints(conv, "pads") == std::vector<std::int64_t>{1, 1, 1, 1});
  CHECK(ints(conv, "strides") == std::vector<std::int64_t>{1, 1});
  const auto& conv1 = node_of(g, "Conv", 1);
  CHECK(ints(conv1, "pads") == std::vector<std::int64_t>{0, 0, 0, 0});
  CHECK(ints(conv1, "strides") == std::vector<std::int64_t>{2, 2});
  CHECK(ints(node_of(g, "MaxPool"), "strides") == std::vector<std::int64_t>{2, 2});
  // 2x2 pool, stride 1, `same` over 2x2: one row and column of padding after.
  const auto& avg = node_of(g, "AveragePool");
  CHECK(ints(avg, "pads") == std::vector<std::int64_t>{0, 0, 1, 1});
  CHECK(attribute(avg, "count_include_pad")->i() == 0);
  CHECK(attribute(node_of(g, "BatchNormalization"), "epsilon")->f() == doctest::Approx(1e-3));
  CHECK(floats(initializer(g, "rescaling/scale")) == std::vector<float>{1.0f / 255});
  CHECK(floats(initializer(g, "rescaling/offset")) == std::vector<float>{-0.5f});

  // The kernel goes from Keras's HWIO [3, 3, 3, 4] to ONNX's OIHW [4, 3, 3, 3].
  const auto w = model.get_weights();
  const auto& k = initializer(g, "conv2d/kernel");
  CHECK(std::vector<std::int64_t>(k.dims().begin(), k.dims().end()) ==
        std::vector<std::int64_t>{4, 3, 3, 3});
  const auto oihw = floats(k);
  for (std::size_t y = 0; y < 3; ++y)
    for (std::size_t x = 0; x < 3; ++x)
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t o = 0; o < 4; ++o)
          CHECK(oihw[((o * 3 + i) * 3 + y) * 3 + x] == w[((y * 3 + x) * 3 + i) * 4 + o]);

  // BatchNormalization exports its moving statistics, not its initial values by accident.
  auto state = model.get_state_weights();
  for (std::size_t i = 0; i < state.size(); ++i) state[i] = 0.25f + float(i);
  model.set_state_weights(state);
  const onnx::GraphProto g2 = mo::make_onnx_model(model).graph();
  CHECK(floats(initializer(g2, "batch_normalization/moving_mean")) ==
        std::vector<float>{0.25f, 1.25f, 2.25f, 3.25f});
  CHECK(floats(initializer(g2, "batch_normalization/moving_variance")) ==
        std::vector<float>{4.25f, 5.25f, 6.25f, 7.25f});
}

TEST_CASE("save_onnx: GlobalAveragePooling2D reduces whichever layout it finds, untransposed") {
  using AfterConv =
      mo::Model<mo::Sequential<mo::Conv2D<4, 3>, mo::GlobalAveragePooling2D, mo::Dense<2>>,
                mo::Input<6, 6, 1>>;
  const onnx::GraphProto g = mo::make_onnx_model(AfterConv{1}).graph();
  CHECK(op_types(g) == std::vector<std::string>{"Transpose", "Conv", "ReduceMean", "Gemm"});
  CHECK(ints(node_of(g, "ReduceMean"), "axes") == std::vector<std::int64_t>{2, 3});

  using Direct =
      mo::Model<mo::Sequential<mo::GlobalAveragePooling2D, mo::Dense<2>>, mo::Input<6, 6, 3>>;
  const onnx::GraphProto d = mo::make_onnx_model(Direct{1}).graph();
  CHECK(op_types(d) == std::vector<std::string>{"ReduceMean", "Gemm"});
  CHECK(ints(node_of(d, "ReduceMean"), "axes") == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("save_onnx: float16 on request stores half weights and a half input and output") {
  ConvNet model{5};
  const onnx::GraphProto g =
      mo::make_onnx_model(model, {.precision = mo::OnnxPrecision::float16}).graph();
  CHECK(g.input(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  CHECK(g.output(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  const auto& k = initializer(g, "conv2d/kernel");
  CHECK(k.data_type() == onnx::TensorProto::FLOAT16);
  CHECK(k.raw_data().size() == 4 * 3 * 3 * 3 * 2);
  // The first OIHW value is HWIO's first too: the half of kernel[0].
  const auto w = model.get_weights();
  const auto lo = static_cast<unsigned char>(k.raw_data()[0]);
  const auto hi = static_cast<unsigned char>(k.raw_data()[1]);
  CHECK(std::uint16_t(lo | hi << 8) == mo::half(w[0]).bits);

  // A 16-bit policy is exported in float32 unless asked.
  using Mixed = mo::Model<mo::Sequential<mo::Dense<4, mo::ReLU>, mo::Dense<2, mo::Softmax>>,
                          mo::Input<3>, mo::mixed_float16>;
  const onnx::ModelProto mixed = mo::make_onnx_model(Mixed{1});
  CHECK(mixed.graph().initializer(0).data_type() == onnx::TensorProto::FLOAT);
  CHECK(mixed.metadata_props(0).value() == "mixed_float16");
}

TEST_CASE("save_onnx: writes the serialized model, and names the path it cannot write") {
  mo::testing::TempDir dir;
  Mlp model{3};
  mo::save_onnx(model, dir / "mlp.onnx");
  std::ifstream in(dir / "mlp.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto back;
  REQUIRE(back.ParseFromString(bytes));
  CHECK(back.graph().node_size() == mo::make_onnx_model(model).graph().node_size());
  CHECK(back.graph().initializer_size() == 6 + 4);  // 3 kernels, 3 biases, GELU's 4 scalars

  const auto missing = dir / "no" / "such" / "folder" / "m.onnx";
  const std::string where = missing.string();
  CHECK_THROWS_WITH_AS(mo::save_onnx(model, missing), doctest::Contains(where.c_str()), mo::error);
}

namespace {

// What a model holds at each epoch's end (trainable and moving statistics), seen as a
// callback sees it, after ModelCheckpoint has saved.
struct RecordWeights : mo::Callback {
  std::vector<std::vector<mo::NamedWeights>> epochs;
  void on_epoch_end(int /*epoch*/, const mo::Logs& /*logs*/) override {
    epochs.push_back(model_->named_weights());
  }
};

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The ONNX initializers that the recorded weights make, name -> raw bytes.
std::map<std::string, std::string> initializers_of(const onnx::ModelProto& m) {
  std::map<std::string, std::string> out;
  for (const auto& t : m.graph().initializer()) out[t.name()] = t.raw_data();
  return out;
}

template <class Spec>
onnx::ModelProto model_from(const std::vector<mo::NamedWeights>& named,
                            const mo::OnnxOptions& options = {}) {
  std::vector<float> trainable, state;
  for (const auto& w : named) {
    const bool is_state = w.name.ends_with("moving_mean") || w.name.ends_with("moving_variance");
    auto& to = is_state ? state : trainable;
    to.insert(to.end(), w.values.begin(), w.values.end());
  }
  return mo::make_onnx_model<Spec>(trainable, state, options);
}

auto convnet_batches() {
  std::vector<float> x(64 * 12 * 12 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 256);
  std::vector<std::int32_t> y(64);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t((i * 3) % 5);
  return mo::data::from(std::move(x), std::move(y), 12 * 12 * 3) | mo::data::batch(16);
}

}  // namespace

TEST_CASE("ModelCheckpoint: onnx_filepath writes the graph at each save, as the model was then") {
  mo::testing::TempDir dir;
  ConvNet model{5};
  model.compile(mo::Adam{{.learning_rate = 0.05}}, mo::SparseCategoricalCrossentropy{});
  // mode "max" on a falling loss: epoch 1 saves (no best yet), later ones only when the loss
  // rises, so that save_best_only has epochs to skip.
  mo::callbacks::ModelCheckpoint ckpt{{.filepath = (dir / "ckpt-{epoch:02d}.safetensors").string(),
                                       .monitor = "loss",
                                       .save_best_only = true,
                                       .save_weights_only = true,
                                       .mode = "max",
                                       .onnx_filepath = (dir / "onnx/m-{epoch:02d}.onnx").string(),
                                       .onnx_export = mo::onnx_export<ConvNet>()}};
  RecordWeights record;
  constexpr int epochs = 6;
  const mo::History h =
      model.fit(convnet_batches(), {.epochs = epochs, .callbacks = {&ckpt, &record}, .verbose = 0});

  std::vector<int> expected;  // 1-based epochs whose loss beat the best so far
  std::optional<double> best;
  for (int e = 0; e < epochs; ++e) {
    const double loss = h.history.at("loss")[std::size_t(e)];
    if (!best || loss > *best) {
      best = loss;
      expected.push_back(e + 1);
    }
  }
  REQUIRE(expected.size() < std::size_t(epochs));
  std::vector<std::filesystem::path> paths;
  for (int e : expected) {
    paths.push_back(dir / fmt::format("ckpt-{:02d}.safetensors", e));
    paths.push_back(dir / "onnx" / fmt::format("m-{:02d}.onnx", e));
  }
  CHECK(ckpt.saved() == paths);
  REQUIRE(record.epochs.size() == std::size_t(epochs));
  for (int e = 1; e <= epochs; ++e) {
    const auto onnx_path = dir / "onnx" / fmt::format("m-{:02d}.onnx", e);
    const bool saved = std::find(expected.begin(), expected.end(), e) != expected.end();
    CAPTURE(e);
    REQUIRE(std::filesystem::exists(onnx_path) == saved);
    if (!saved) continue;
    onnx::ModelProto back;
    REQUIRE(back.ParseFromString(read_bytes(onnx_path)));
    const auto& at_epoch = record.epochs[std::size_t(e - 1)];
    CHECK(initializers_of(back) == initializers_of(model_from<ConvNet::spec>(at_epoch)));
    // Spelled out for one trainable tensor and the moving statistics.
    for (const auto& w : at_epoch)
      if (w.name == "dense/bias" || w.name == "batch_normalization/moving_mean")
        CHECK(floats(initializer(back.graph(), w.name)) == w.values);
  }
  // Weights that moved after the first save are not in its file.
  CHECK(initializers_of(model_from<ConvNet::spec>(record.epochs[0])) !=
        initializers_of(model_from<ConvNet::spec>(record.epochs.back())));
}

TEST_CASE("ModelCheckpoint: ONNX alone, in float16, every epoch; and its misuses") {
  mo::testing::TempDir dir;
  Mlp model{3};
  model.compile(mo::SGD{{.learning_rate = 0.1}}, mo::SparseCategoricalCrossentropy{});
  std::vector<float> x(32 * 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) / 7.0f;
  std::vector<std::int32_t> y(32);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t(i % 3);
  auto batches = mo::data::from(std::move(x), std::move(y), 4) | mo::data::batch(8);
  const mo::OnnxOptions half{.precision = mo::OnnxPrecision::float16};
  mo::callbacks::ModelCheckpoint ckpt{{.onnx_filepath = (dir / "mlp-{epoch}.onnx").string(),
                                       .onnx_export = mo::onnx_export<Mlp>(half)}};
  RecordWeights record;
  model.fit(batches, {.epochs = 2, .callbacks = {&ckpt, &record}, .verbose = 0});
  CHECK(ckpt.saved() == std::vector<std::filesystem::path>{dir / "mlp-1.onnx", dir / "mlp-2.onnx"});
  for (int e = 1; e <= 2; ++e) {
    onnx::ModelProto back;
    REQUIRE(back.ParseFromString(read_bytes(dir / fmt::format("mlp-{}.onnx", e))));
    CHECK(back.graph().initializer(0).data_type() == onnx::TensorProto::FLOAT16);
    CHECK(initializers_of(back) ==
          initializers_of(model_from<Mlp::spec>(record.epochs[std::size_t(e - 1)], half)));
  }
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                      std::filesystem::directory_iterator()) == 2);

  // An exporter made for another model type names the weights it expected and found.
  using Other = mo::Model<mo::Sequential<mo::Dense<2>>, mo::Input<4>>;
  mo::callbacks::ModelCheckpoint wrong{
      {.onnx_filepath = (dir / "wrong.onnx").string(), .onnx_export = mo::onnx_export<Other>()}};
  CHECK_THROWS_WITH_AS(model.fit(batches, {.epochs = 1, .callbacks = {&wrong}, .verbose = 0}),
                       doctest::Contains("expected a model with the weights dense/kernel (8), "
                                         "dense/bias (2); found dense/kernel (64)"),
                       mo::error);
  CHECK(!std::filesystem::exists(dir / "wrong.onnx"));

  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint({.onnx_filepath = "m.onnx"}),
                       doctest::Contains("expected an onnx_export"), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint({.onnx_export = mo::onnx_export<Mlp>()}),
                       doctest::Contains("onnx_export expected an onnx_filepath"), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint(mo::callbacks::ModelCheckpoint::Options{}),
                       doctest::Contains("expected a filepath (or an onnx_filepath)"), mo::error);
}

TEST_CASE("save_onnx: Activation layers export their activation's operator, in either layout") {
  using M = mo::Model<
      mo::Sequential<mo::Conv2D<4, 3>, mo::BatchNormalization, mo::Activation<mo::ReLU>,
                     mo::Flatten, mo::Dense<5>, mo::Activation<mo::Tanh>,
                     mo::Activation<mo::Linear>, mo::Dense<3>, mo::Activation<mo::Softmax>>,
      mo::Input<6, 6, 2>>;
  M model{7};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) == std::vector<std::string>{"Transpose", "Conv", "BatchNormalization", "Relu",
                                                "Transpose", "Flatten", "Gemm", "Tanh", "Gemm",
                                                "Softmax"});
  CHECK(attribute(node_of(g, "Softmax"), "axis")->i() == -1);
  CHECK(g.node(g.node_size() - 1).output(0) == "output");
  CHECK(dims(g.output(0)) == std::vector<std::int64_t>{-1, 3});
}

TEST_CASE("save_onnx: RandomFlip and RandomContrast, the identity in inference, add no node") {
  using Augmented =
      mo::Model<mo::Sequential<mo::RandomFlip<>, mo::RandomContrast<std::ratio<1, 5>>,
                               mo::Conv2D<4, 3>, mo::Flatten, mo::Dense<3, mo::Softmax>>,
                mo::Input<6, 6, 2>>;
  using Plain = mo::Model<mo::Sequential<mo::Conv2D<4, 3>, mo::Flatten, mo::Dense<3, mo::Softmax>>,
                          mo::Input<6, 6, 2>>;
  Augmented model{7};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) == op_types(mo::make_onnx_model(Plain{7}).graph()));
  CHECK(op_types(g) ==
        std::vector<std::string>{"Transpose", "Conv", "Transpose", "Flatten", "Gemm", "Softmax"});
}

TEST_CASE("save_onnx: DepthwiseConv2D as a Conv of one group per input channel") {
  using M = mo::Model<mo::Sequential<mo::DepthwiseConv2D<3, mo::DepthMultiplier<2>>, mo::Flatten,
                                     mo::Dense<3, mo::Softmax>>,
                      mo::Input<6, 6, 5>>;
  M model{7};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) ==
        std::vector<std::string>{"Transpose", "Conv", "Transpose", "Flatten", "Gemm", "Softmax"});
  CHECK(attribute(node_of(g, "Conv"), "group")->i() == 5);
}

TEST_CASE("save_onnx: the augmentation layers, identity in inference, add no node") {
  using Augmented = mo::Model<
      mo::Sequential<mo::RandomTranslation<std::ratio<1, 10>, std::ratio<1, 10>>,
                     mo::RandomRotation<std::ratio<1, 10>>, mo::RandomZoom<std::ratio<1, 5>>,
                     mo::Conv2D<4, 3, mo::ReLU>, mo::Flatten, mo::Dense<3, mo::Softmax>>,
      mo::Input<6, 6, 1>>;
  Augmented model{2};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) == std::vector<std::string>{"Transpose", "Conv", "Relu", "Transpose", "Flatten",
                                                "Gemm", "Softmax"});
  CHECK(node_of(g, "Transpose").input(0) == "input");
}

TEST_CASE("save_onnx: SeparableConv2D as a grouped Conv without bias, then a 1x1 Conv") {
  using M = mo::Model<
      mo::Sequential<mo::SeparableConv2D<4, 3, mo::Same, mo::DepthMultiplier<2>, mo::ReLU>,
                     mo::Flatten, mo::Dense<3, mo::Softmax>>,
      mo::Input<6, 6, 5>>;
  M model{7};
  const onnx::GraphProto g = mo::make_onnx_model(model).graph();
  CHECK(op_types(g) == std::vector<std::string>{"Transpose", "Conv", "Conv", "Relu", "Transpose",
                                                "Flatten", "Gemm", "Softmax"});
  CHECK(attribute(node_of(g, "Conv"), "group")->i() == 5);
  CHECK(g.node(1).input_size() == 2);  // the depthwise half has no bias
  CHECK(g.node(2).input_size() == 3);
}
