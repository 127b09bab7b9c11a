// Weights written by real Keras load into the same model in memopt (issue 13, item 13):
// Keras 3's variable paths in a safetensors file ("sequential/dense/kernel"), Keras 3's
// .weights.h5, the legacy .h5 that model.save and ModelCheckpoint("x.h5") write, and tf.keras
// 2's (the guide's). The files under tests/data/keras/ come from
// tests/data/keras/make_keras_weights.py (Keras 3.15.1, tf_keras 2.21.0);
// MEMOPT_KERAS_DATA points the test at freshly made ones instead. The .h5 cases need
// memopt::hdf5 and report skipped without it. Files from elsewhere (issue 35, item 9): external
// links and external storage are refused; load_keras_weights_isolated reads a file in the
// tool memopt_keras_h5, and a file that crashes HDF5 there is a memopt::error here.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <memopt/memopt.hpp>
#if MEMOPT_TEST_HAS_HDF5
#include <memopt/io/keras_h5.hpp>
#endif

#include "temp_dir.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;
using mo::testing::TempDir;

namespace {

// The twins of make_keras_weights.py's models.
using Mlp =
    mo::Model<mo::Sequential<mo::Dense<5, mo::ReLU>, mo::Dense<3, mo::Softmax>>, mo::Input<8>>;
using Cnn = mo::Model<mo::Sequential<mo::Conv2D<4, 3, mo::ReLU>, mo::BatchNormalization,
                                     mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<3, mo::Softmax>>,
                      mo::Input<8, 8, 2>>;

#if MEMOPT_TEST_HAS_HDF5
constexpr bool has_hdf5 = true;
#else
constexpr bool has_hdf5 = false;
#endif

fs::path keras_dir() {
  if (const char* d = std::getenv("MEMOPT_KERAS_DATA"); d && *d) return d;
  return fs::path(MEMOPT_TEST_DATA_DIR) / "keras";
}

// Keras 2's files are made only where tf_keras is importable: the committed ones otherwise.
[[maybe_unused]] fs::path fixture(const std::string& name) {
  const fs::path fresh = keras_dir() / name;
  return fs::exists(fresh) ? fresh : fs::path(MEMOPT_TEST_DATA_DIR) / "keras" / name;
}

const nlohmann::json& expected(const std::string& model) {
  static const nlohmann::json all = [] {
    std::ifstream in(keras_dir() / "keras_expected.json");
    REQUIRE(in);
    return nlohmann::json::parse(in);
  }();
  return all.at(model);
}

std::vector<float> floats(const nlohmann::json& j) {
  return j.get<std::vector<float>>();
}

// The model holds Keras's weights exactly, and predicts what Keras predicted.
template <class M>
void check_matches_keras(M& model, const std::string& name) {
  const nlohmann::json& e = expected(name);
  const std::vector<float> weights = model.get_parameters();
  const std::vector<float> state = model.get_state_weights();
  for (const bool trainable : {true, false})
    for (const auto& s : mo::checkpoint::parameter_slices<typename M::spec>(trainable)) {
      CAPTURE(s.name);
      const auto& values = trainable ? weights : state;
      const std::vector<float> got(values.begin() + static_cast<std::ptrdiff_t>(s.offset),
                                   values.begin() + static_cast<std::ptrdiff_t>(s.offset + s.size));
      CHECK(got == floats(e.at("weights").at("sequential/" + s.name)));
    }
  const std::vector<float> predicted = model.predict(floats(e.at("inputs")));
  const std::vector<float> keras = floats(e.at("predictions"));
  REQUIRE(predicted.size() == keras.size());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < keras.size(); ++i) {
    err += (double(predicted[i]) - keras[i]) * (double(predicted[i]) - keras[i]);
    norm += double(keras[i]) * keras[i];
  }
  CHECK(std::sqrt(err / norm) < 1e-6);
}

#if MEMOPT_TEST_HAS_HDF5
namespace h5 = mo::io::detail::h5;

// Fixed-length strings padded with NULs, as numpy's bytes arrays are stored (older tf.keras
// wrote `layer_names` so); the longest fills its width with no NUL at all.
void write_fixed_strings(hid_t object, const char* name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  const h5::Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.get(), width);
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  const hsize_t n = values.size();
  const h5::Handle space{H5Screate_simple(1, &n, nullptr), H5Sclose};
  const h5::Handle attr{H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                        H5Aclose};
  std::vector<char> bytes(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i)
    std::copy(values[i].begin(), values[i].end(), bytes.begin() + std::ptrdiff_t(i * width));
  REQUIRE(H5Awrite(attr.get(), type.get(), bytes.data()) >= 0);
}

void write_floats(hid_t loc, const std::string& path, const std::vector<hsize_t>& shape,
                  const std::vector<float>& values) {
  const h5::Handle links{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Pset_create_intermediate_group(links.get(), 1);
  const h5::Handle space{H5Screate_simple(int(shape.size()), shape.data(), nullptr), H5Sclose};
  const h5::Handle set{H5Dcreate2(loc, path.c_str(), H5T_IEEE_F32LE, space.get(), links.get(),
                                  H5P_DEFAULT, H5P_DEFAULT),
                       H5Dclose};
  REQUIRE(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
}
#endif

}  // namespace

TEST_CASE("a safetensors file of Keras 3's variable paths loads: {v.path: v.numpy()}") {
  Mlp mlp{1};
  mlp.load_weights(keras_dir() / "mlp.safetensors");
  check_matches_keras(mlp, "mlp");

  // Conv2D's [kh, kw, in, filters] kernel and BatchNormalization's moving statistics too.
  Cnn cnn{1};
  cnn.load_weights(keras_dir() / "cnn.safetensors");
  check_matches_keras(cnn, "cnn");
}

TEST_CASE("load_weights names the naming it expected when neither memopt's nor Keras 3's fits") {
  TempDir dir;
  Mlp a{3}, b{4};
  // memopt's own names still load.
  a.save_weights(dir / "own.safetensors");
  b.load_weights(dir / "own.safetensors");
  CHECK(b.get_weights() == a.get_weights());

  // Names of another model: the message gives both namings and what the file has.
  const auto w = a.get_weights();
  std::vector<mo::io::TensorView> views;
  for (const auto& s : mo::checkpoint::parameter_slices<Mlp::spec>())
    views.push_back(mo::io::TensorView::of("model/layer_" + s.name, s.shape,
                                           std::span<const float>(w).subspan(s.offset, s.size)));
  mo::io::save_safetensors(dir / "other.safetensors", views);
  CHECK_THROWS_WITH_AS(
      b.load_weights(dir / "other.safetensors"),
      doctest::Contains("expected the model's tensors named as memopt writes them "
                        "(\"dense/kernel\", ...) or as Keras 3's variable paths, under the "
                        "model's name (\"sequential/dense/kernel\", ...: {v.path: v.numpy() for "
                        "v in model.weights}), found model/layer_dense/kernel, "),
      mo::error);

  // Keras's paths with a tensor of another shape: the tensor, the expected and found shapes.
  mo::Model<mo::Sequential<mo::Dense<4, mo::ReLU>, mo::Dense<3, mo::Softmax>>, mo::Input<8>> narrow{
      1};
  CHECK_THROWS_WITH_AS(
      narrow.load_weights(keras_dir() / "mlp.safetensors"),
      doctest::Contains("load_weights (Keras 3 variable paths, \"sequential/...\"): "
                        "tensor \"sequential/dense/kernel\": expected shape "
                        "[8, 4], found [8, 5]"),
      mo::error);
  // A deeper model: the missing tensor by its Keras path.
  mo::Model<
      mo::Sequential<mo::Dense<5, mo::ReLU>, mo::Dense<3, mo::ReLU>, mo::Dense<3, mo::Softmax>>,
      mo::Input<8>>
      deeper{1};
  CHECK_THROWS_WITH_AS(deeper.load_weights(keras_dir() / "mlp.safetensors"),
                       doctest::Contains("expected tensor \"sequential/dense_2/kernel\" of shape "
                                         "[3, 3], found none"),
                       mo::error);
}

TEST_CASE("an HDF5 file given to load_weights says how to read it") {
  Mlp mlp{1};
  CHECK_THROWS_WITH_AS(mlp.load_weights(keras_dir() / "mlp.weights.h5"),
                       doctest::Contains("found an HDF5 file (Keras's .weights.h5 or .h5?): read "
                                         "it with mo::load_keras_weights"),
                       mo::error);
}

TEST_CASE("Keras 3's .weights.h5 (model.save_weights) loads" * doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  const auto f = mo::io::KerasH5File::open(keras_dir() / "mlp.weights.h5");
  CHECK(f.layout() == mo::io::KerasH5Layout::keras3);
  Mlp mlp{1};
  mo::load_keras_weights(mlp, keras_dir() / "mlp.weights.h5");
  check_matches_keras(mlp, "mlp");

  // Layers without weights (pooling, Flatten) have empty groups; BatchNormalization's four
  // variables are gamma, beta, then the moving statistics.
  Cnn cnn{1};
  mo::load_keras_weights(cnn, keras_dir() / "cnn.weights.h5");
  check_matches_keras(cnn, "cnn");
#endif
}

TEST_CASE("a legacy .h5 (model.save, ModelCheckpoint(\"x.h5\")) loads" * doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  const auto f = mo::io::KerasH5File::open(keras_dir() / "cnn.h5");
  CHECK(f.layout() == mo::io::KerasH5Layout::legacy);
  REQUIRE(f.layers().size() == 5);  // layer_names lists every layer, weights or not
  CHECK(f.layers()[1].name == "batch_normalization");
  REQUIRE(f.layers()[1].weights.size() == 4);
  CHECK(f.layers()[1].weights[2].name == "moving_mean");
  CHECK(f.layers()[1].weights[2].path ==
        "model_weights/batch_normalization/sequential/batch_normalization/moving_mean");

  Mlp mlp{1};
  mo::load_keras_weights(mlp, keras_dir() / "mlp.h5");
  check_matches_keras(mlp, "mlp");
  Cnn cnn{1};
  mo::load_keras_weights(cnn, keras_dir() / "cnn.h5");
  check_matches_keras(cnn, "cnn");
#endif
}

TEST_CASE("tf.keras 2's .h5 (the guide's ModelCheckpoint, save_weights) loads" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  // save_weights puts the layers at the file's root, with Keras 2's "conv2d/kernel:0" names.
  const auto f = mo::io::KerasH5File::open(fixture("cnn.tf_keras_weights.h5"));
  CHECK(f.layout() == mo::io::KerasH5Layout::legacy);
  REQUIRE(f.layers().size() == 5);
  REQUIRE(f.layers()[0].weights.size() == 2);
  CHECK(f.layers()[0].weights[0].name == "kernel");
  CHECK(f.layers()[0].weights[0].path == "conv2d/conv2d/kernel:0");

  for (const char* file : {"mlp.tf_keras.h5", "mlp.tf_keras_weights.h5"}) {
    CAPTURE(file);
    Mlp mlp{1};
    mo::load_keras_weights(mlp, fixture(file));
    check_matches_keras(mlp, "mlp");  // the same weights as the Keras 3 model's
  }
  for (const char* file : {"cnn.tf_keras.h5", "cnn.tf_keras_weights.h5"}) {
    CAPTURE(file);
    Cnn cnn{1};
    mo::load_keras_weights(cnn, fixture(file));
    check_matches_keras(cnn, "cnn");
  }
#endif
}

TEST_CASE("a Keras .h5 file that does not fit the model says what was expected and found" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  const fs::path dir = keras_dir();
  Cnn cnn{1};
  // Keras 3's groups are named as memopt names its layers: another model's are missing.
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights(cnn, dir / "mlp.weights.h5"),
      doctest::Contains("load_keras_weights: expected the group \"layers/conv2d\" for the "
                        "model's layer conv2d (Conv2D: kernel [3, 3, 2, 4], bias [4]), found "
                        "layers with weights: dense (2 weights), dense_1 (2 weights)"),
      mo::error);
  // A shape mismatch names the tensor, the expected and the found shape.
  mo::Model<mo::Sequential<mo::Dense<4, mo::ReLU>, mo::Dense<3, mo::Softmax>>, mo::Input<8>> narrow{
      1};
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(narrow, dir / "mlp.weights.h5"),
                       doctest::Contains("layers/dense/vars/0 (for dense/kernel): expected shape "
                                         "[8, 4], found [8, 5]"),
                       mo::error);
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(narrow, dir / "mlp.h5"),
                       doctest::Contains("model_weights/dense/sequential/dense/kernel (for "
                                         "dense/kernel): expected shape [8, 4], found [8, 5]"),
                       mo::error);
  // A legacy file matches layers by position, as Keras does: the count must agree.
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(cnn, dir / "mlp.h5"),
                       doctest::Contains("expected 3 layers with weights (conv2d, "
                                         "batch_normalization, dense), found 2 (dense (2 "
                                         "weights), dense_1 (2 weights))"),
                       mo::error);
  // A larger model: Keras 3's file has no group for its extra layer.
  mo::Model<
      mo::Sequential<mo::Dense<5, mo::ReLU>, mo::Dense<3, mo::ReLU>, mo::Dense<3, mo::Softmax>>,
      mo::Input<8>>
      deeper{1};
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(deeper, dir / "mlp.weights.h5"),
                       doctest::Contains("expected the group \"layers/dense_2\""), mo::error);
  // A smaller one: the file's extra layer is named.
  mo::Model<mo::Sequential<mo::Dense<5, mo::Softmax>>, mo::Input<8>> shallow{1};
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(shallow, dir / "mlp.weights.h5"),
                       doctest::Contains("unexpected layer \"layers/dense_1\" with 2 weights "
                                         "(the model's layers with weights: dense)"),
                       mo::error);
#endif
}

TEST_CASE("fixed-length string attributes (older tf.keras) are read whole" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  // The mlp's weights at the root, as tf.keras 2's save_weights lays them out.
  TempDir dir;
  const nlohmann::json& w = expected("mlp").at("weights");
  {
    const h5::Handle file{
        H5Fcreate((dir / "old.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
    REQUIRE(file);
    write_fixed_strings(file.get(), "layer_names", {"dense", "dense_1"});
    for (const std::string layer : {"dense", "dense_1"}) {
      const h5::Handle g{
          H5Gcreate2(file.get(), layer.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
      write_fixed_strings(g.get(), "weight_names", {layer + "/kernel:0", layer + "/bias:0"});
      const std::vector<float> kernel = floats(w.at("sequential/" + layer + "/kernel"));
      const std::vector<float> bias = floats(w.at("sequential/" + layer + "/bias"));
      write_floats(g.get(), layer + "/kernel:0", {kernel.size() / bias.size(), bias.size()},
                   kernel);
      write_floats(g.get(), layer + "/bias:0", {bias.size()}, bias);
    }
  }
  const auto f = mo::io::KerasH5File::open(dir / "old.h5");
  REQUIRE(f.layers().size() == 2);
  CHECK(f.layers()[1].name == "dense_1");
  CHECK(f.layers()[1].weights[0].name == "kernel");
  Mlp mlp{1};
  mo::load_keras_weights(mlp, dir / "old.h5");
  check_matches_keras(mlp, "mlp");

  // An HDF5 file that is not Keras's says what it has.
  {
    const h5::Handle file{
        H5Fcreate((dir / "other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
    const h5::Handle g{H5Gcreate2(file.get(), "images", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose};
  }
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(mlp, dir / "other.h5"),
                       doctest::Contains("expected Keras weights: a group \"layers\" (Keras 3's "
                                         ".weights.h5), a group \"model_weights\" or an "
                                         "attribute \"layer_names\" (a legacy .h5), found "
                                         "\"images\""),
                       mo::error);
#endif
}

TEST_CASE("a missing, foreign or truncated .h5 file raises memopt::error" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  TempDir dir;
  Mlp mlp{1};
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(mlp, dir / "none.h5"),
                       doctest::Contains("none.h5: cannot open: No such file"), mo::error);
  mlp.save_weights(dir / "w.safetensors");
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(mlp, dir / "w.safetensors"),
                       doctest::Contains("expected an HDF5 file, found one HDF5 cannot open"),
                       mo::error);
  // Every prefix of a real file: an error each time, never a crash or a partial load.
  std::ifstream in(keras_dir() / "mlp.weights.h5", std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(bytes.size() > 4096);
  for (const std::size_t size : {std::size_t{0}, std::size_t{7}, std::size_t{512},
                                 std::size_t{2048}, bytes.size() / 2, bytes.size() - 1}) {
    CAPTURE(size);
    const fs::path cut = dir / "cut.weights.h5";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
    const auto before = mlp.get_weights();
    CHECK_THROWS_AS(mo::load_keras_weights(mlp, cut), mo::error);
    CHECK(mlp.get_weights() == before);
  }
#endif
}

// --- Files from elsewhere (issue 35, item 9) ---------------------------------------------------

#if MEMOPT_TEST_HAS_HDF5
namespace {

// The mlp as tf.keras 2's save_weights lays it out, at the root of `path`, with dense's kernel
// made by `kernel` (a dataset, or a link to one, named "dense/kernel:0" in group "dense").
template <class MakeKernel>
void write_legacy_mlp(const fs::path& path, MakeKernel kernel) {
  const nlohmann::json& w = expected("mlp").at("weights");
  const h5::Handle file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
  REQUIRE(file);
  write_fixed_strings(file.get(), "layer_names", {"dense", "dense_1"});
  for (const std::string layer : {"dense", "dense_1"}) {
    const h5::Handle g{H5Gcreate2(file.get(), layer.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose};
    write_fixed_strings(g.get(), "weight_names", {layer + "/kernel:0", layer + "/bias:0"});
    const std::vector<float> k = floats(w.at("sequential/" + layer + "/kernel"));
    const std::vector<float> bias = floats(w.at("sequential/" + layer + "/bias"));
    if (layer == "dense")
      kernel(g.get(), k, std::vector<hsize_t>{k.size() / bias.size(), bias.size()});
    else
      write_floats(g.get(), layer + "/kernel:0", {k.size() / bias.size(), bias.size()}, k);
    write_floats(g.get(), layer + "/bias:0", {bias.size()}, bias);
  }
}

// An executable shell script at `path`: a stand-in for the reader that misbehaves.
fs::path script(const fs::path& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

// `source` with the byte at each offset set: a corruption found by mutating the committed
// fixtures (tests/data/keras/) that crashes libhdf5 1.10.8 inside H5Aexists.
fs::path mutated(const fs::path& dir, const std::string& source,
                 std::vector<std::pair<std::size_t, unsigned char>> bytes) {
  std::ifstream in(fs::path(MEMOPT_TEST_DATA_DIR) / "keras" / source, std::ios::binary);
  std::string data{std::istreambuf_iterator<char>(in), {}};
  for (const auto& [offset, value] : bytes) {
    REQUIRE(offset < data.size());
    data[offset] = static_cast<char>(value);
  }
  const fs::path out = dir / ("mutated-" + source);
  std::ofstream(out, std::ios::binary).write(data.data(), std::streamsize(data.size()));
  return out;
}

}  // namespace
#endif

TEST_CASE("an external link or externally stored values are refused, not followed" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  // HDF5 follows an external link into whatever file it names, and reads a dataset with
  // external storage from whatever files its creation lists: a weight file from elsewhere
  // could make the model's weights out of any file this process may read.
  TempDir dir;
  {
    const h5::Handle outside{
        H5Fcreate((dir / "outside.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
    write_floats(outside.get(), "secret", {8, 5}, std::vector<float>(40, 7.0f));
  }
  write_legacy_mlp(dir / "linked.h5", [&](hid_t g, const std::vector<float>&, auto) {
    const h5::Handle links{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
    H5Pset_create_intermediate_group(links.get(), 1);
    REQUIRE(H5Lcreate_external((dir / "outside.h5").c_str(), "/secret", g, "dense/kernel:0",
                               links.get(), H5P_DEFAULT) >= 0);
  });
  Mlp mlp{1};
  const std::vector<float> before = mlp.get_weights();
  const std::string refused =
      "expected a dataset \"dense/dense/kernel:0\", found none (it is an "
      "external link to \"/secret\" in \"" +
      (dir / "outside.h5").string() + "\", which memopt does not follow";
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(mlp, dir / "linked.h5"),
                       doctest::Contains(refused.c_str()), mo::error);
  CHECK(mlp.get_weights() == before);

  write_legacy_mlp(dir / "external.h5", [&](hid_t g, const std::vector<float>& k, auto shape) {
    const h5::Handle create{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    REQUIRE(H5Pset_external(create.get(), (dir / "raw.bin").c_str(), 0,
                            hsize_t(k.size() * sizeof(float))) >= 0);
    const h5::Handle links{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
    H5Pset_create_intermediate_group(links.get(), 1);
    const h5::Handle space{H5Screate_simple(2, shape.data(), nullptr), H5Sclose};
    const h5::Handle set{H5Dcreate2(g, "dense/kernel:0", H5T_IEEE_F32LE, space.get(), links.get(),
                                    create.get(), H5P_DEFAULT),
                         H5Dclose};
    REQUIRE(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, k.data()) >= 0);
  });
  REQUIRE(fs::file_size(dir / "raw.bin") == 160);
  CHECK_THROWS_WITH_AS(mo::load_keras_weights(mlp, dir / "external.h5"),
                       doctest::Contains("dense/dense/kernel:0: expected values stored in the "
                                         "file, found them in external files"),
                       mo::error);
  CHECK(mlp.get_weights() == before);

  // The reader in its own process says the same.
  CHECK_THROWS_WITH_AS(mo::load_keras_weights_isolated(mlp, dir / "linked.h5"),
                       doctest::Contains(refused.c_str()), mo::error);
  CHECK(mlp.get_weights() == before);
#endif
}

TEST_CASE("load_keras_weights_isolated loads what load_keras_weights loads, read elsewhere" *
          doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  for (const char* file : {"mlp.weights.h5", "mlp.h5", "mlp.tf_keras.h5"}) {
    CAPTURE(file);
    Mlp mlp{1};
    mo::load_keras_weights_isolated(mlp, fixture(file));
    check_matches_keras(mlp, "mlp");
  }
  for (const char* file : {"cnn.weights.h5", "cnn.h5", "cnn.tf_keras_weights.h5"}) {
    CAPTURE(file);
    Cnn cnn{1};
    mo::load_keras_weights_isolated(cnn, fixture(file));
    check_matches_keras(cnn, "cnn");  // the moving statistics too
  }
  // The tool's output, kept as a file (a conversion done once), loads without HDF5.
  TempDir dir;
  const std::vector<std::byte> converted =
      mo::io::keras_h5_tensors(mo::io::KerasH5File::open(keras_dir() / "cnn.h5"));
  std::ofstream(dir / "cnn.keras_h5.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(converted.data()), std::streamsize(converted.size()));
  Cnn cnn{1};
  cnn.set_weights(mo::checkpoint::keras_weights<Cnn::spec>(
      mo::io::KerasH5Tensors::read(dir / "cnn.keras_h5.safetensors")));
  check_matches_keras(cnn, "cnn");
  // A model that does not fit gets the in-process loader's message, naming the .h5 file.
  mo::Model<mo::Sequential<mo::Dense<4, mo::ReLU>, mo::Dense<3, mo::Softmax>>, mo::Input<8>> narrow{
      1};
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(narrow, keras_dir() / "mlp.weights.h5"),
      doctest::Contains("mlp.weights.h5: load_keras_weights: layers/dense/vars/0 (for "
                        "dense/kernel): expected shape [8, 4], found [8, 5]"),
      mo::error);
#endif
}

TEST_CASE(
    "a file that crashes HDF5 crashes only the reader: memopt::error, and this process goes on" *
    doctest::skip(!has_hdf5)) {
#if MEMOPT_TEST_HAS_HDF5
  TempDir dir;
  Mlp mlp{1};
  const std::vector<float> before = mlp.get_weights();
  // One byte of mlp.h5 changed: libhdf5 1.10.8 dies of SIGSEGV on it in H5Aexists (read in
  // this process, the test would end here). Another HDF5 may refuse it instead: either way
  // an error, never a crash or a partial load.
  const fs::path crashing = mutated(dir.path, "mlp.h5", {{991, 207}});
  try {
    mo::load_keras_weights_isolated(mlp, crashing);
    FAIL("the damaged file loaded");
  } catch (const mo::error& e) {
    MESSAGE(std::string(e.what()));
    CHECK(std::string(e.what()).find(crashing.string()) != std::string::npos);
  }
  CHECK(mlp.get_weights() == before);
  // Likewise one byte of tf.keras 2's file.
  CHECK_THROWS_AS(
      mo::load_keras_weights_isolated(mlp, mutated(dir.path, "mlp.tf_keras.h5", {{3638, 204}})),
      mo::error);

  // A reader killed by a signal, whatever the HDF5: the file and the signal are named.
  const fs::path good = keras_dir() / "mlp.h5";
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(mlp, good,
                                      {.helper = script(dir / "crash", "kill -SEGV $$").string()}),
      doctest::Contains(("keras h5 " + good.string() + ": the reader " + (dir / "crash").string() +
                         " was killed by signal 11 (Segmentation fault) while reading it")
                            .c_str()),
      mo::error);
  // One that hangs is stopped; one that floods is stopped; one that writes nonsense, or
  // fails, or is missing, is an error too.
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(mlp, good,
                                      {.helper = script(dir / "hang", "exec sleep 30").string(),
                                       .timeout = std::chrono::milliseconds(300)}),
      doctest::Contains("did not finish within 300 ms; it was stopped"), mo::error);
  CHECK_THROWS_WITH_AS(mo::load_keras_weights_isolated(
                           mlp, good,
                           {.helper = script(dir / "mute", "exec >&- 2>&-; exec sleep 30").string(),
                            .timeout = std::chrono::milliseconds(300)}),
                       doctest::Contains("did not finish within 300 ms; it was stopped"),
                       mo::error);
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(mlp, good,
                                      {.helper = script(dir / "flood", "exec yes").string()}),
      doctest::Contains("bytes, more than the model's weights could need; it was stopped"),
      mo::error);
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(
          mlp, good, {.helper = script(dir / "nonsense", "echo nonsense").string()}),
      doctest::Contains(("safetensors " + good.string()).c_str()), mo::error);
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(
          mlp, good,
          {.helper = script(dir / "fails", "echo 'it went wrong' >&2; exit 3").string()}),
      "it went wrong", mo::error);
  CHECK_THROWS_WITH_AS(
      mo::load_keras_weights_isolated(mlp, good, {.helper = (dir / "missing").string()}),
      doctest::Contains(("cannot start the reader " + (dir / "missing").string()).c_str()),
      mo::error);
  CHECK(mlp.get_weights() == before);
  // Still alive, and still able to load.
  mo::load_keras_weights_isolated(mlp, good);
  check_matches_keras(mlp, "mlp");
#endif
}
