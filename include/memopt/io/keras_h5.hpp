#pragma once
// Keras's HDF5 weight files, read into a memopt model for C++ inference (or more training):
//   - Keras 3's `.weights.h5` (model.save_weights): layers/<layer>/vars/<index>, where <layer>
//     is the class's name numbered within the model ("dense", "dense_1"), as memopt names
//     its layers, and <index> counts a layer's trainable variables, then its others;
//   - the legacy `.h5`: model.save("x.h5") and ModelCheckpoint("x.h5") (Keras 2 and 3) put
//     model_weights/<layer name>/<weight path>, tf.keras 2's save_weights("x.h5") the same at
//     the root; the attributes `layer_names` and `weight_names` give the order, and Keras
//     matches the layers that have weights by position, as this does.
// Opt-in: it needs the HDF5 C library (Debian: libhdf5-dev); link memopt::hdf5.
//
// ```cpp
// #include <memopt/io/keras_h5.hpp>
// auto model = mo::Model<Net, mo::Input<784>>{0};
// mo::load_keras_weights(model, "model_checkpoint.h5");  // written by Keras
// ```

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/detail/hdf5.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/model/spec.hpp"

namespace memopt::io {

/// How a Keras HDF5 file lays its weights out.
enum class KerasH5Layout {
  keras3,  ///< layers/<layer>/vars/<index>: Keras 3's `.weights.h5`
  legacy,  ///< [model_weights/]<layer name>/<weight path>: `.h5` from Keras 2, or Keras 3's save
};

/// One weight as the file stores it (its values are read on demand).
struct KerasH5Weight {
  std::string path;  ///< from the file's root: "layers/dense/vars/0"
  std::string name;  ///< Keras 3: the index ("0"); legacy: the weight's own name ("kernel")
  std::vector<std::uint64_t> shape;

  std::string shape_string() const { return detail::shape_string(shape); }
  std::uint64_t elements() const {
    std::uint64_t n = 1;
    for (std::uint64_t d : shape) n *= d;
    return n;
  }
};

/// One layer's group and its weights, in the file's order for them.
struct KerasH5Layer {
  std::string name;  ///< the group's name: "dense_1"
  std::vector<KerasH5Weight> weights;
};

/// A Keras weight file, open for reading: its layers and their weights' names and shapes
/// are read when it opens, the values when asked for.
///
/// ```cpp
/// auto f = mo::io::KerasH5File::open("model.weights.h5");
/// for (const auto& layer : f.layers())
///   for (const auto& w : layer.weights) fmt::print("{} {}\n", w.path, w.shape_string());
/// ```
class KerasH5File {
 public:
  static KerasH5File open(const std::filesystem::path& path) {
    KerasH5File f;
    f.source_ = path.string();
    // A clear reason for a missing file, which HDF5 words at length.
    if (std::FILE* probe = std::fopen(path.c_str(), "rb"))
      std::fclose(probe);
    else
      throw f.fail("cannot open: " + io::detail::errno_message(errno));
    const detail::h5::QuietErrors quiet;
    f.file_ = {H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
    if (!f.file_) {
      const bool archive = path.extension() == ".keras";
      throw f.fail(fmt::format("expected an HDF5 file, found one HDF5 cannot open ({}){}",
                               detail::h5::last_error(),
                               archive ? "; a .keras file is a zip archive: read the "
                                         "model.weights.h5 inside it"
                                       : ""));
    }
    f.read_layout();
    return f;
  }

  const std::string& source() const { return source_; }
  KerasH5Layout layout() const { return layout_; }
  /// Keras 3: the groups under layers/, by name; legacy: the layers of `layer_names`, in order.
  const std::vector<KerasH5Layer>& layers() const { return layers_; }

  /// Reads `w`'s values, converted to float, into `out` (exactly w.elements() floats).
  void read_floats(const KerasH5Weight& w, std::span<float> out) const {
    if (out.size() != w.elements())
      throw fail(fmt::format("{}: expected {} values for shape {}, asked for {}", w.path,
                             w.elements(), w.shape_string(), out.size()));
    const detail::h5::QuietErrors quiet;
    detail::h5::Handle set{H5Dopen2(file_.get(), w.path.c_str(), H5P_DEFAULT), H5Dclose};
    if (!set) throw fail(fmt::format("{}: cannot open ({})", w.path, detail::h5::last_error()));
    if (H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
      throw fail(fmt::format("{}: cannot read ({})", w.path, detail::h5::last_error()));
  }

  /// An error whose message starts with this file's name.
  error fail(const std::string& what) const { return error("keras h5 " + source_ + ": " + what); }

 private:
  KerasH5File() = default;

  void read_layout() {
    const hid_t root = file_.get();
    if (H5Aexists(root, "layer_names") > 0) return read_legacy("");
    if (detail::h5::has_link(root, "model_weights")) return read_legacy("model_weights");
    if (detail::h5::has_link(root, "layers")) return read_keras3();
    throw fail(
        fmt::format("expected Keras weights: a group \"layers\" (Keras 3's .weights.h5), a group "
                    "\"model_weights\" or an attribute \"layer_names\" (a legacy .h5), found {}",
                    describe(detail::h5::link_names(root))));
  }

  static std::string describe(const std::vector<std::string>& names) {
    return names.empty() ? std::string("nothing")
                         : fmt::format("\"{}\"", fmt::join(names, "\", \""));
  }

  detail::h5::Handle open_group(const std::string& path) const {
    detail::h5::Handle g{H5Gopen2(file_.get(), path.c_str(), H5P_DEFAULT), H5Gclose};
    if (!g)
      throw fail(
          fmt::format("expected a group \"{}\", found none ({})", path, detail::h5::last_error()));
    return g;
  }

  // The shape of dataset `path`, which must hold floating-point values.
  KerasH5Weight weight(const std::string& path, std::string name) const {
    detail::h5::Handle set{H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT), H5Dclose};
    if (!set)
      throw fail(fmt::format("expected a dataset \"{}\", found none ({})", path,
                             detail::h5::last_error()));
    detail::h5::Handle type{H5Dget_type(set.get()), H5Tclose};
    detail::h5::Handle space{H5Dget_space(set.get()), H5Sclose};
    if (!type || !space)
      throw fail(fmt::format("{}: cannot read its type ({})", path, detail::h5::last_error()));
    if (H5Tget_class(type.get()) != H5T_FLOAT)
      throw fail(fmt::format("{}: expected floating-point values, found another type", path));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 8)
      throw fail(fmt::format("{}: expected 0 to 8 dimensions, found {}", path, rank));
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
      throw fail(fmt::format("{}: cannot read its shape ({})", path, detail::h5::last_error()));
    return {path, std::move(name), std::vector<std::uint64_t>(dims.begin(), dims.end())};
  }

  void read_keras3() {
    layout_ = KerasH5Layout::keras3;
    const detail::h5::Handle layers = open_group("layers");
    for (const std::string& name : detail::h5::link_names(layers.get())) {
      KerasH5Layer layer{name, {}};
      const std::string vars = "layers/" + name + "/vars";
      if (detail::h5::has_link(open_group("layers/" + name).get(), "vars")) {
        std::vector<std::string> indices = detail::h5::link_names(open_group(vars).get());
        for (const std::string& i : indices)
          if (i.empty() || i.size() > 9 || i.find_first_not_of("0123456789") != std::string::npos)
            throw fail(
                fmt::format("{}: expected variables named by their index, found \"{}\"", vars, i));
        // HDF5 orders names as text ("10" before "2"); Keras numbers them.
        std::ranges::sort(indices, {}, [](const std::string& i) { return std::stoi(i); });
        for (std::size_t k = 0; k < indices.size(); ++k) {
          if (indices[k] != std::to_string(k))
            throw fail(fmt::format("{}: expected variables 0 to {}, found {}", vars,
                                   indices.size() - 1, describe(indices)));
          layer.weights.push_back(weight(vars + "/" + indices[k], indices[k]));
        }
      }
      layers_.push_back(std::move(layer));
    }
  }

  void read_legacy(const std::string& group) {
    layout_ = KerasH5Layout::legacy;
    const std::string where = group.empty() ? std::string("/") : group;
    const detail::h5::Handle g = group.empty() ? open_group("/") : open_group(group);
    bool found = false;
    const detail::h5::Strings names =
        detail::h5::chunked_string_attribute(g.get(), "layer_names", found);
    if (!found || !names.problem.empty())
      throw fail(fmt::format("{}: expected the attribute \"layer_names\", {}", where,
                             found ? names.problem : "found none"));
    const std::string base = group.empty() ? "" : group + "/";
    for (const std::string& name : names.values) {
      const detail::h5::Handle layer = open_group(base + name);
      const detail::h5::Strings weights =
          detail::h5::chunked_string_attribute(layer.get(), "weight_names", found);
      if (!found || !weights.problem.empty())
        throw fail(fmt::format("{}{}: expected the attribute \"weight_names\", {}", base, name,
                               found ? weights.problem : "found none"));
      KerasH5Layer l{name, {}};
      for (const std::string& w : weights.values) {
        // "sequential/dense/kernel" (Keras 3), "dense/kernel:0" (Keras 2): "kernel".
        std::string short_name = w.substr(w.find_last_of('/') + 1);
        short_name = short_name.substr(0, short_name.find(':'));
        l.weights.push_back(weight(base + name + "/" + w, std::move(short_name)));
      }
      layers_.push_back(std::move(l));
    }
  }

  std::string source_;
  detail::h5::Handle file_;
  KerasH5Layout layout_ = KerasH5Layout::keras3;
  std::vector<KerasH5Layer> layers_;
};

}  // namespace memopt::io

namespace memopt::checkpoint {

namespace detail {

// One weight of the model, where its values go among get_weights' (see join_weights).
struct KerasTarget {
  std::string name;  // the weight's own name: "kernel"
  std::vector<std::uint64_t> shape;
  std::size_t offset = 0;
  std::size_t size = 0;
};

// The model's layers that have weights, each with its weights in Keras's order: trainable
// first, then the rest (Keras 3's variable indices; BatchNormalization's gamma, beta,
// moving_mean, moving_variance).
template <class Spec>
std::vector<std::pair<std::size_t, std::vector<KerasTarget>>> keras_layers() {
  std::vector<std::pair<std::size_t, std::vector<KerasTarget>>> layers;
  for (std::size_t i = 0; i < Spec::layer_count; ++i) {
    std::vector<KerasTarget> targets;
    for (std::size_t k = 0; k < Spec::weights.size(); ++k) {
      const WeightEntry& e = Spec::weights[k];
      if (e.layer == i)
        targets.push_back(
            {std::string(e.decl.name),
             std::vector<std::uint64_t>(e.decl.shape.begin(), e.decl.shape.begin() + e.decl.rank),
             Spec::tables().keras_offset(k), e.decl.size()});
    }
    std::ranges::sort(targets, {}, &KerasTarget::offset);
    if (!targets.empty()) layers.emplace_back(i, std::move(targets));
  }
  return layers;
}

inline std::string describe_targets(const std::vector<KerasTarget>& targets) {
  std::string s;
  for (const KerasTarget& t : targets)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", t.name, io::detail::shape_string(t.shape));
  return s;
}

}  // namespace detail

/// Reads a Keras HDF5 weight file (see io/keras_h5.hpp for the layouts) for a model of type
/// `Spec`: returns its weights, the non-trainable ones (moving statistics) included, as
/// Model::set_weights takes them. Strict: each of the model's layers with weights must find its
/// layer in the file with as many weights, of the same shapes (and, in a legacy file, names); the
/// file may have no other layer with weights.
///
/// ```cpp
/// model.set_weights(mo::checkpoint::load_keras_h5<Model::spec>("model.weights.h5"));
/// ```
template <class Spec>
std::vector<float> load_keras_h5(const io::KerasH5File& f) {
  std::vector<float> weights(Spec::weight_count);
  const auto model = detail::keras_layers<Spec>();
  const bool keras3 = f.layout() == io::KerasH5Layout::keras3;

  std::vector<const io::KerasH5Layer*> file_layers;  // those with weights
  for (const io::KerasH5Layer& l : f.layers())
    if (!l.weights.empty()) file_layers.push_back(&l);
  std::string file_names;
  for (const io::KerasH5Layer* l : file_layers)
    file_names += fmt::format("{}{} ({} weights)", file_names.empty() ? "" : ", ", l->name,
                              l->weights.size());
  if (file_names.empty()) file_names = "none";
  std::string model_names;
  for (const auto& [i, targets] : model)
    model_names += fmt::format("{}{}", model_names.empty() ? "" : ", ", Spec::layer_name(i));

  // Keras 3 names its groups by class as memopt names its layers; a legacy file's layers
  // go by position (its names are whatever the Keras session made them: dense_7).
  if (!keras3 && file_layers.size() != model.size())
    throw f.fail(fmt::format(
        "load_keras_weights: expected {} layers with weights ({}), found {} ({}); Keras "
        "matches a legacy .h5 file's layers to the model's by position",
        model.size(), model_names, file_layers.size(), file_names));
  std::vector<bool> used(file_layers.size(), false);
  for (std::size_t m = 0; m < model.size(); ++m) {
    const auto& [i, targets] = model[m];
    const std::string name = Spec::layer_name(i);
    std::size_t k = m;
    if (keras3) {
      k = file_layers.size();
      for (std::size_t j = 0; j < file_layers.size(); ++j)
        if (file_layers[j]->name == name) k = j;
      if (k == file_layers.size())
        throw f.fail(fmt::format(
            "load_keras_weights: expected the group \"layers/{}\" for the model's layer {} "
            "({}: {}), found layers with weights: {}",
            name, name, Spec::layer_classes[i], detail::describe_targets(targets), file_names));
    }
    used[k] = true;
    const io::KerasH5Layer& layer = *file_layers[k];
    if (layer.weights.size() != targets.size())
      throw f.fail(fmt::format(
          "load_keras_weights: layer \"{}\" for the model's {} ({}): expected {} weights ({}), "
          "found {}",
          layer.name, name, Spec::layer_classes[i], targets.size(),
          detail::describe_targets(targets), layer.weights.size()));
    for (std::size_t w = 0; w < targets.size(); ++w) {
      const detail::KerasTarget& t = targets[w];
      const io::KerasH5Weight& found = layer.weights[w];
      if (!keras3 && found.name != t.name)
        throw f.fail(
            fmt::format("load_keras_weights: {} (for {}/{}): expected weight \"{}\", "
                        "found \"{}\"",
                        found.path, name, t.name, t.name, found.name));
      if (found.shape != t.shape)
        throw f.fail(fmt::format("load_keras_weights: {} (for {}/{}): expected shape {}, found {}",
                                 found.path, name, t.name, io::detail::shape_string(t.shape),
                                 found.shape_string()));
      f.read_floats(found, std::span<float>(weights).subspan(t.offset, t.size));
    }
  }
  for (std::size_t j = 0; j < file_layers.size(); ++j)
    if (!used[j])
      throw f.fail(fmt::format(
          "load_keras_weights: unexpected layer \"layers/{}\" with {} weights (the model's "
          "layers with weights: {})",
          file_layers[j]->name, file_layers[j]->weights.size(), model_names));
  return weights;
}

template <class Spec>
std::vector<float> load_keras_h5(const std::filesystem::path& path) {
  return load_keras_h5<Spec>(io::KerasH5File::open(path));
}

}  // namespace memopt::checkpoint

namespace memopt {

/// Loads a Keras HDF5 weight file (`.weights.h5`, or a legacy `.h5` such as
/// ModelCheckpoint("model_checkpoint.h5") writes) into `model`: its weights and its
/// non-trainable state (BatchNormalization's moving statistics).
///
/// ```cpp
/// auto model = mo::Model<Net, mo::Input<784>>{0};
/// mo::load_keras_weights(model, "model.weights.h5");
/// auto probabilities = model.predict(images);
/// ```
template <class M>
requires requires(M& m, std::vector<float> v) {
  typename M::spec;
  m.set_weights(v);
}
void load_keras_weights(M& model, const std::filesystem::path& path) {
  model.set_weights(checkpoint::load_keras_h5<typename M::spec>(path));
}

}  // namespace memopt
