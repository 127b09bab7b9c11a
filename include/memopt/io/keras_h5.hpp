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
// Read only `.h5` files you trust (your own, or your team's) with load_keras_weights. It runs
// the HDF5 library in this process, and HDF5 does not defend itself against hostile files: of
// 450 mutated .h5 files, 2 crashed the process inside libhdf5 (H5Aread on `weight_names`); of
// 600 made by changing 1 to 8 bytes of tests/data/keras/'s files, 6 (SIGSEGV, in H5Aexists
// among others, HDF5 1.10.8). memopt cannot catch or fix that. memopt does refuse what would make
// HDF5 read other files: external links (a link access property list whose H5Pset_elink_cb callback
// refuses every traversal), datasets whose values are stored in external files, and virtual
// datasets. For a file from elsewhere use mo::load_keras_weights_isolated (io/keras_weights.hpp):
// the tool memopt_keras_h5 reads it in another process, and whatever the file does to that process
// becomes a memopt::error here; `memopt_keras_h5 model.h5 model.keras_h5.safetensors`
// converts it once, for io::KerasH5Tensors::read.
//
// ```cpp
// #include <memopt/io/keras_h5.hpp>
// auto model = mo::Model<Net, mo::Input<784>>{0};
// mo::load_keras_weights(model, "model_checkpoint.h5");  // written by Keras, trusted
// mo::load_keras_weights_isolated(model, "downloaded.h5");  // from elsewhere
// ```

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/detail/hdf5.hpp"
#include "memopt/io/keras_weights.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/model/spec.hpp"

namespace memopt::io {

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
    f.refuse_external_links();
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
    detail::h5::Handle set{H5Dopen2(file_.get(), w.path.c_str(), datasets_.get()), H5Dclose};
    if (!set) throw fail(fmt::format("{}: cannot open ({})", w.path, reason()));
    check_storage(set.get(), w.path);
    if (H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
      throw fail(fmt::format("{}: cannot read ({})", w.path, detail::h5::last_error()));
  }

  /// An error whose message starts with this file's name.
  error fail(const std::string& what) const { return error("keras h5 " + source_ + ": " + what); }

 private:
  KerasH5File() = default;

  // Property lists for opening links, groups and datasets whose callback refuses to follow
  // any external link (into another file, which a hostile file could name freely), noting
  // its target for the error message.
  void refuse_external_links() {
    const auto refuse = [](const char*, const char*, const char* file, const char* object,
                           unsigned*, hid_t, void* refused) -> herr_t {
      // No exception may cross the C library: a failed copy only loses the target's name.
      try {
        *static_cast<std::string*>(refused) =
            fmt::format("\"{}\" in \"{}\"", object ? object : "", file ? file : "");
      } catch (...) {
      }
      return -1;
    };
    const std::pair<detail::h5::Handle*, hid_t> lists[] = {
        {&links_, H5P_LINK_ACCESS}, {&groups_, H5P_GROUP_ACCESS}, {&datasets_, H5P_DATASET_ACCESS}};
    for (const auto& [list, cls] : lists) {
      *list = {H5Pcreate(cls), H5Pclose};
      if (!*list || H5Pset_elink_cb(list->get(), refuse, refused_link_.get()) < 0)
        throw fail("cannot make HDF5 refuse external links (" + detail::h5::last_error() + ")");
    }
  }

  // Why HDF5 could not open something: an external link refused, or its own reason.
  std::string reason() const {
    if (!refused_link_->empty())
      return "it is an external link to " + *refused_link_ +
             ", which memopt does not follow: a weight file must hold its own weights";
    return detail::h5::last_error();
  }

  // Refuses a dataset whose values HDF5 would read from other files: external storage
  // (H5Pset_external) and virtual datasets.
  void check_storage(hid_t set, const std::string& path) const {
    detail::h5::Handle create{H5Dget_create_plist(set), H5Pclose};
    if (!create)
      throw fail(
          fmt::format("{}: cannot read how it is stored ({})", path, detail::h5::last_error()));
    if (H5Pget_external_count(create.get()) != 0)
      throw fail(
          fmt::format("{}: expected values stored in the file, found them in external "
                      "files, which memopt does not read",
                      path));
    if (H5Pget_layout(create.get()) == H5D_VIRTUAL)
      throw fail(
          fmt::format("{}: expected values stored in the file, found a virtual dataset "
                      "(its values are in other files), which memopt does not read",
                      path));
  }

  void read_layout() {
    const hid_t root = file_.get();
    if (H5Aexists(root, "layer_names") > 0) return read_legacy("");
    if (has_link(root, "model_weights")) return read_legacy("model_weights");
    if (has_link(root, "layers")) return read_keras3();
    throw fail(
        fmt::format("expected Keras weights: a group \"layers\" (Keras 3's .weights.h5), a group "
                    "\"model_weights\" or an attribute \"layer_names\" (a legacy .h5), found {}",
                    describe(detail::h5::link_names(root))));
  }

  static std::string describe(const std::vector<std::string>& names) {
    return names.empty() ? std::string("nothing")
                         : fmt::format("\"{}\"", fmt::join(names, "\", \""));
  }

  bool has_link(hid_t loc, const std::string& name) const {
    return H5Lexists(loc, name.c_str(), links_.get()) > 0;
  }

  detail::h5::Handle open_group(const std::string& path) const {
    detail::h5::Handle g{H5Gopen2(file_.get(), path.c_str(), groups_.get()), H5Gclose};
    if (!g) throw fail(fmt::format("expected a group \"{}\", found none ({})", path, reason()));
    return g;
  }

  // The shape of dataset `path`, which must hold floating-point values.
  KerasH5Weight weight(const std::string& path, std::string name) const {
    detail::h5::Handle set{H5Dopen2(file_.get(), path.c_str(), datasets_.get()), H5Dclose};
    if (!set) throw fail(fmt::format("expected a dataset \"{}\", found none ({})", path, reason()));
    check_storage(set.get(), path);
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
      if (has_link(open_group("layers/" + name).get(), "vars")) {
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
  // Where the callback notes a refused external link: on the heap, so that it stays put when
  // the file is moved.
  std::unique_ptr<std::string> refused_link_ = std::make_unique<std::string>();
  detail::h5::Handle links_, groups_, datasets_;  // refusing external links
  detail::h5::Handle file_;
  KerasH5Layout layout_ = KerasH5Layout::keras3;
  std::vector<KerasH5Layer> layers_;
};

/// The weights of `f`, all of them, as the tool memopt_keras_h5 writes them
/// (encode_keras_h5_tensors); raises memopt::error when they hold more than `max_values`
/// values, before reading them.
///
/// ```cpp
/// std::vector<std::byte> bytes = mo::io::keras_h5_tensors(mo::io::KerasH5File::open("model.h5"));
/// ```
[[gnu::cold]] inline std::vector<std::byte> keras_h5_tensors(
    const KerasH5File& f, std::uint64_t max_values = std::uint64_t(-1)) {
  std::uint64_t total = 0;
  for (const KerasH5Layer& l : f.layers())
    for (const KerasH5Weight& w : l.weights) {
      // Multiplied with checks: a hostile shape's element count may overflow 64 bits, and
      // wrap to a small count for a large dataset.
      std::uint64_t n = 1;
      bool huge = false;
      for (const std::uint64_t d : w.shape) {
        huge = huge || (d != 0 && n > max_values / d);
        n = huge ? n : n * d;
      }
      if (huge || n > max_values - total)
        throw f.fail(
            fmt::format("{}: the file's weights hold more than {} values, the most "
                        "the model they are for could need",
                        w.path, max_values));
      total += w.elements();
    }
  std::vector<std::vector<float>> values;
  for (const KerasH5Layer& l : f.layers())
    for (const KerasH5Weight& w : l.weights) {
      values.emplace_back(static_cast<std::size_t>(w.elements()));
      f.read_floats(w, values.back());
    }
  return encode_keras_h5_tensors(f.layout(), f.layers(), values);
}

}  // namespace memopt::io

namespace memopt::checkpoint {

/// Reads a Keras HDF5 weight file (see io/keras_h5.hpp for the layouts) for a model of type
/// `Spec`: returns its weights, the non-trainable ones (moving statistics) included, as
/// Model::set_weights takes them; strict, as keras_weights. Runs HDF5 in this process: for
/// files you trust.
///
/// ```cpp
/// model.set_weights(mo::checkpoint::load_keras_h5<Model::spec>("model.weights.h5"));
/// ```
template <class Spec>
std::vector<float> load_keras_h5(const io::KerasH5File& f) {
  return keras_weights<Spec>(f);
}

template <class Spec>
std::vector<float> load_keras_h5(const std::filesystem::path& path) {
  return load_keras_h5<Spec>(io::KerasH5File::open(path));
}

}  // namespace memopt::checkpoint

namespace memopt {

/// Loads a Keras HDF5 weight file (`.weights.h5`, or a legacy `.h5` such as
/// ModelCheckpoint("model_checkpoint.h5") writes) into `model`: its weights and its
/// non-trainable state (BatchNormalization's moving statistics). HDF5 reads the file in this
/// process: only for files you trust (see this header's comment); for a file from elsewhere
/// use load_keras_weights_isolated.
///
/// ```cpp
/// auto model = mo::Model<Net, mo::Input<784>>{0};
/// mo::load_keras_weights(model, "model.weights.h5");
/// auto probabilities = model.predict(test | mo::data::batch(256));
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
