#pragma once
// Checkpoints: a model's weights, and optionally its optimizer state, as safetensors tensors.
//
// Tensor names and layouts follow Keras, so that a Keras or PyTorch user reads them with
// what they already know:
//   dense/kernel     F32 [inputs, units]   (PyTorch's Linear.weight is its transpose)
//   dense/bias       F32 [units]
//   dense_1/kernel   ...
// and every non-trainable weight beside them (batch_normalization/moving_mean F32 [channels]):
// a checkpoint holds the model's weights as Model::get_weights does, all of them.
// A full checkpoint (Model::save) adds the optimizer's slots, laid out like the weights,
//   optimizer/iterations              I64 []      updates applied so far
//   optimizer/dense/kernel/momentum   F32 [inputs, units]   (Adam's m, or SGD's velocity)
//   optimizer/dense/kernel/velocity   F32 [inputs, units]   (Adam's v)
// one tensor per slot the optimizer names (RMSprop's "velocity", Adagrad's "accumulator", ...),
// and its `__metadata__` records what resuming needs besides tensors: the epochs completed,
// the step (which is also every learning-rate schedule's position), the learning rate when
// it is a number (callbacks may have changed it), the loss scale, the policy and a hash of
// the model's type; with gradient accumulation, the sums of the batches since the last update
// are one more block of optimizer state (`optimizer/dense/kernel/gradient_accumulator`, Keras's
// name) and the metadata says how many batches and rows they hold.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memopt/core/error.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/train/loss_scale.hpp"

namespace memopt::checkpoint {

/// Where one named tensor of the model lives in the flat parameter buffer.
///
/// ```cpp
/// auto s = mo::checkpoint::parameter_slices<Model::spec>()[0];  // "dense/kernel", [784, 128]
/// ```
struct ParameterSlice {
  std::string name;                  // "dense/kernel"
  std::vector<std::uint64_t> shape;  // [inputs, units] or [units]
  std::size_t offset = 0;            // in floats, into the parameters
  std::size_t size = 0;              // in floats
};

/// The model's trainable tensors in Keras's order and names: each layer's weights as the
/// layer declares them (a Dense kernel, then its bias).
///
/// ```cpp
/// for (const auto& s : mo::checkpoint::parameter_slices<Model::spec>())
///   fmt::print("{} at {}\n", s.name, s.offset);
/// ```
inline std::vector<ParameterSlice> parameter_slices(const SpecTables& model,
                                                    bool trainable = true) {
  std::vector<ParameterSlice> slices;
  for (const WeightEntry& e : model.weights) {
    if (e.decl.trainable != trainable) continue;
    // A flat Dense kernel is `units x inputs` column-major, which is Keras's [inputs, units]
    // row-major: every weight goes out as its bytes are.
    std::vector<std::uint64_t> shape(e.decl.shape.begin(), e.decl.shape.begin() + e.decl.rank);
    slices.push_back({model.layer_name(e.layer) + "/" + std::string(e.decl.name), std::move(shape),
                      e.offset, e.decl.size()});
  }
  return slices;
}
template <class Spec>
std::vector<ParameterSlice> parameter_slices(bool trainable = true) {
  return parameter_slices(Spec::tables(), trainable);
}

/// The model's non-trainable tensors (BatchNormalization's `moving_mean`, `moving_variance`),
/// each where it lives in the non-trainable state.
template <class Spec>
std::vector<ParameterSlice> state_slices() {
  return parameter_slices<Spec>(false);
}

/// Every tensor of the model, trainable or not, in Keras's order, each where it lives in the
/// model's weights as get_weights holds them (see join_weights).
///
/// ```cpp
/// for (const auto& s : mo::checkpoint::weight_slices<Model::spec>())  // dense/kernel, ...
///   fmt::print("{} at {}\n", s.name, s.offset);                        // into get_weights()
/// ```
inline std::vector<ParameterSlice> weight_slices(const SpecTables& model) {
  std::vector<ParameterSlice> slices;
  for (std::size_t k = 0; k < model.weights.size(); ++k) {
    const WeightEntry& e = model.weights[k];
    std::vector<std::uint64_t> shape(e.decl.shape.begin(), e.decl.shape.begin() + e.decl.rank);
    slices.push_back({model.layer_name(e.layer) + "/" + std::string(e.decl.name), std::move(shape),
                      model.keras_offset(k), e.decl.size()});
  }
  std::ranges::stable_sort(slices, {}, &ParameterSlice::offset);
  return slices;
}
template <class Spec>
std::vector<ParameterSlice> weight_slices() {
  return weight_slices(Spec::tables());
}

namespace detail {

constexpr std::string_view activation_name(ActivationKind k) {
  switch (k) {
    case ActivationKind::linear:
      return "linear";
    case ActivationKind::relu:
      return "relu";
    case ActivationKind::sigmoid:
      return "sigmoid";
    case ActivationKind::tanh:
      return "tanh";
    case ActivationKind::gelu:
      return "gelu";
    case ActivationKind::softmax:
      return "softmax";
  }
  return "unknown";
}

// 64-bit FNV-1a: stable across compilers and runs, unlike std::hash.
constexpr std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// A model description's hash as checkpoints record it: 16 hex digits.
inline std::string description_hash(std::string_view description) {
  return fmt::format("{:016x}", fnv1a(description));
}

inline float parse_float(const std::string& text, const io::SafetensorsFile& f,
                         std::string_view key) {
  float v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw f.fail(fmt::format("__metadata__ \"{}\": expected a number, found \"{}\"", key, text));
  return v;
}

inline double parse_double(const std::string& text, const io::SafetensorsFile& f,
                           std::string_view key) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw f.fail(fmt::format("__metadata__ \"{}\": expected a number, found \"{}\"", key, text));
  return v;
}

inline std::int64_t parse_int(const std::string& text, const io::SafetensorsFile& f,
                              std::string_view key) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw f.fail(fmt::format("__metadata__ \"{}\": expected an integer, found \"{}\"", key, text));
  return v;
}

inline const std::string& required(const io::SafetensorsFile& f, std::string_view key,
                                   std::string_view why) {
  const auto it = f.metadata().find(key);
  if (it == f.metadata().end())
    throw f.fail(fmt::format("expected __metadata__ \"{}\" ({}), found none", key, why));
  return it->second;
}

}  // namespace detail

/// A readable description of the model's type: layers, widths, activations and input.
///
/// ```cpp
/// // "Input<784> dense(128, relu) dense_1(10, softmax)"
/// std::string d = mo::checkpoint::model_description<Model::spec>();
/// ```
[[gnu::cold]] inline std::string model_description(const SpecTables& model) {
  const auto dims = [](const Shape& sh, std::string_view sep) {
    std::string d = std::to_string(sh.dims[0]);
    for (std::size_t k = 1; k < sh.rank; ++k) d += fmt::format("{}{}", sep, sh.dims[k]);
    return d;
  };
  std::string s = fmt::format("Input<{}>", dims(model.shapes[0], ", "));
  for (std::size_t i = 0; i < model.layer_count(); ++i) {
    ActivationKind act = ActivationKind::linear;
    for (const NodeInfo& n : model.nodes)
      if (n.layer == i) act = n.activation;
    s += fmt::format(" {}({}, {})", model.layer_name(i), dims(model.shapes[i + 1], "x"),
                     detail::activation_name(act));
  }
  return s;
}
template <class Spec>
std::string model_description() {
  return model_description(Spec::tables());
}

/// A hash of model_description(), as 16 hex digits: a full checkpoint loads only into a
/// model of the same type.
///
/// ```cpp
/// std::string h = mo::checkpoint::model_hash<Model::spec>();  // e.g. "3f2a...": 16 digits
/// ```
template <class Spec>
std::string model_hash() {
  return detail::description_hash(model_description<Spec>());
}

/// What a checkpoint needs of a model's type, as values: its description and policy, and
/// where each named tensor lives. The reading and writing below take one, so that they are
/// compiled once, whatever the number of model types in a program.
///
/// ```cpp
/// const mo::checkpoint::ModelLayout l = mo::checkpoint::layout_of<Model::spec>();
/// mo::checkpoint::save_weights("w.safetensors", l, model.get_weights());
/// ```
struct ModelLayout {
  std::string description;  // model_description<Spec>()
  std::string policy;       // "float32", "mixed_float16", ...
  std::size_t parameter_count = 0;
  std::size_t state_count = 0;
  /// Every weight, into get_weights (weight_slices<Spec>()).
  std::vector<ParameterSlice> weights;
  /// The trainable ones, into the parameters (parameter_slices<Spec>()): how the optimizer's
  /// state is laid out.
  std::vector<ParameterSlice> parameters;

  /// Values of get_weights: the trainable and the non-trainable ones.
  std::size_t weight_count() const { return parameter_count + state_count; }

  /// model_hash<Spec>(): 16 hex digits of the description's FNV-1a.
  std::string hash() const { return detail::description_hash(description); }
};

template <class Spec>
ModelLayout layout_of() {
  return {model_description<Spec>(), std::string(Spec::policy::name), Spec::parameter_count,
          Spec::state_count,         weight_slices<Spec>(),           parameter_slices<Spec>()};
}

/// Names of SGD's and Adam's slots, in the order of their state: Adam's "momentum" (m) and
/// "velocity" (v), SGD-with-momentum's "momentum", none for plain SGD. (Every optimizer names
/// its own with `slot_names()`; TrainingState::slot_names carries them.)
///
/// ```cpp
/// auto names = mo::checkpoint::slot_names("adam", 2);  // {"momentum", "velocity"}
/// ```
inline std::vector<std::string> slot_names(std::string_view optimizer, std::size_t slots) {
  if (slots == 0) return {};
  if (optimizer == "adam" && slots == 2) return {"momentum", "velocity"};
  if (optimizer == "sgd" && slots == 1) return {"momentum"};
  throw error(fmt::format("checkpoint: no slot names for optimizer \"{}\" with {} slots", optimizer,
                          slots));
}

/// Everything a training run needs to continue exactly where it stopped.
///
/// ```cpp
/// mo::checkpoint::TrainingState s = mo::checkpoint::load<Model::spec>("run.safetensors",
///                                                                   "adam", 2);
/// int next_epoch = s.epoch;
/// ```
struct TrainingState {
  /// Every weight, the non-trainable ones (moving statistics) included: Model::get_weights.
  std::vector<float> weights;
  /// `slots` blocks, each laid out like the trainable weights (Model::get_parameters).
  std::vector<float> optimizer_state;
  std::string optimizer;  // the optimizer's name: "adam", "sgd", "adamw", ...
  /// One name per state block ("momentum", "velocity"); empty: slot_names(optimizer, blocks).
  std::vector<std::string> slot_names;
  /// The learning rate when it is a number (not a schedule): ReduceLROnPlateau's changes
  /// survive a resume.
  std::optional<double> learning_rate;
  std::int64_t iterations = 0;
  /// Epochs completed: resume with `fit(..., {.initial_epoch = epoch})`.
  int epoch = 0;
  /// Batches of the next epoch already trained (a checkpoint saved mid-epoch): fit skips them.
  int epoch_batches = 0;
  float loss_scale = 1.0f;
  std::int32_t loss_scale_good_steps = 0;
  /// With gradient accumulation: the batches summed since the last update, and their rows
  /// (the sums are the optimizer state's "gradient_accumulator" block).
  std::int64_t accumulated_batches = 0;
  std::uint64_t accumulated_rows = 0;
};

/// Copies a loss scale into, and back out of, a TrainingState.
///
/// ```cpp
/// mo::checkpoint::TrainingState state;
/// mo::checkpoint::store_loss_scale(state, model.loss_scale());
/// ```
inline void store_loss_scale(TrainingState& s, const DynamicLossScale& l) {
  s.loss_scale = l.scale;
  s.loss_scale_good_steps = l.good_steps;
}
inline void store_loss_scale(TrainingState& s, const NoLossScale&) {
  s.loss_scale = 1.0f;
  s.loss_scale_good_steps = 0;
}

/// Checks that a restored loss scale can drive `l`: a positive, finite scale and a count of
/// good steps in [0, l.growth_interval); raises memopt::error naming the field, what was
/// expected and what was found. (A scale of nan, 0 or inf makes every step overflow or do
/// nothing, and training then silently stops making progress.)
///
/// ```cpp
/// const mo::checkpoint::TrainingState state = mo::checkpoint::load<Model::spec>("run.safetensors",
///                                                                         "adam", 2);
/// mo::checkpoint::check_loss_scale(state, model.loss_scale());  // before restoring anything
/// ```
inline void check_loss_scale(const TrainingState& s, const DynamicLossScale& l) {
  if (!(std::isfinite(s.loss_scale) && s.loss_scale > 0.0f))
    throw error(fmt::format(
        "load: loss scale (__metadata__ \"loss_scale\"): expected a positive finite number, "
        "found {}",
        s.loss_scale));
  if (s.loss_scale_good_steps < 0 || s.loss_scale_good_steps >= l.growth_interval)
    throw error(fmt::format(
        "load: loss scale's good steps (__metadata__ \"loss_scale_good_steps\"): expected 0 to "
        "{} (below the growth interval {}), found {}",
        l.growth_interval - 1, l.growth_interval, s.loss_scale_good_steps));
}
inline void check_loss_scale(const TrainingState&, const NoLossScale&) {}

/// Restores the scale after check_loss_scale().
inline void restore_loss_scale(const TrainingState& s, DynamicLossScale& l) {
  check_loss_scale(s, l);
  l.scale = s.loss_scale;
  l.good_steps = s.loss_scale_good_steps;
}
inline void restore_loss_scale(const TrainingState&, NoLossScale&) {}

namespace detail {

inline io::Metadata base_metadata(const ModelLayout& layout, std::string_view contents) {
  return {{"format", "memopt"},
          {"contents", std::string(contents)},
          {"model", layout.description},
          {"model_hash", layout.hash()},
          {"policy", layout.policy}};
}

[[gnu::cold]] inline void add_weight_views(std::vector<io::TensorView>& views,
                                           const std::vector<ParameterSlice>& slices,
                                           std::span<const float> weights,
                                           const std::string& prefix, const std::string& suffix) {
  for (const ParameterSlice& s : slices)
    views.push_back(
        io::TensorView::of(prefix + s.name + suffix, s.shape, weights.subspan(s.offset, s.size)));
}

inline void check_weight_count(const ModelLayout& layout, std::span<const float> weights,
                               const char* what) {
  if (weights.size() != layout.weight_count())
    throw error(fmt::format(
        "{}: expected {} weights ({} trainable and {} non-trainable, as Model::get_weights "
        "gives them), found {}",
        what, layout.weight_count(), layout.parameter_count, layout.state_count, weights.size()));
}

// Reads tensor `name` of `shape` into `out`, converting F16/BF16 when `allow_narrow`.
inline void read_exact(const io::SafetensorsFile& f, const std::string& name,
                       const std::vector<std::uint64_t>& shape, std::span<float> out,
                       bool allow_narrow, std::string_view what) {
  const io::TensorInfo* t = f.find(name);
  if (!t)
    throw f.fail(
        fmt::format("{}: expected tensor \"{}\" of shape {}, found none (the file has: {})", what,
                    name, io::detail::shape_string(shape), f.names()));
  if (t->shape != shape)
    throw f.fail(fmt::format("{}: tensor \"{}\": expected shape {}, found {}", what, name,
                             io::detail::shape_string(shape), t->shape_string()));
  const bool ok = t->dtype == io::Dtype::f32 ||
                  (allow_narrow && (t->dtype == io::Dtype::f16 || t->dtype == io::Dtype::bf16));
  if (!ok)
    throw f.fail(fmt::format("{}: tensor \"{}\": expected dtype {}, found {}", what, name,
                             allow_narrow ? "F32, F16 or BF16" : "F32", io::dtype_name(t->dtype)));
  f.read_floats(*t, out);
}

// Reads the tensor of each slice, named prefix + name + suffix, into its place in `out`
// (add_weight_views's reverse).
inline void read_slices(const io::SafetensorsFile& f, const std::vector<ParameterSlice>& slices,
                        std::span<float> out, bool allow_narrow, std::string_view what,
                        const std::string& prefix = "", const std::string& suffix = "") {
  for (const ParameterSlice& s : slices)
    read_exact(f, prefix + s.name + suffix, s.shape, out.subspan(s.offset, s.size), allow_narrow,
               what);
}

}  // namespace detail

/// Writes the model's weights (Model::get_weights: the non-trainable ones, such as
/// BatchNormalization's moving statistics, included) as Keras-named tensors to `path`,
/// atomically (Keras's save_weights).
///
/// ```cpp
/// mo::checkpoint::save_weights<Model::spec>("w.safetensors", model.get_weights());
/// ```
inline void save_weights(const std::filesystem::path& path, const ModelLayout& layout,
                         std::span<const float> weights) {
  detail::check_weight_count(layout, weights, "save_weights");
  std::vector<io::TensorView> views;
  detail::add_weight_views(views, layout.weights, weights, "", "");
  io::save_safetensors(path, views, detail::base_metadata(layout, "weights"));
}

template <class Spec>
void save_weights(const std::filesystem::path& path, std::span<const float> weights) {
  save_weights(path, layout_of<Spec>(), weights);
}

namespace detail {

// The two namings load_weights reads: memopt's own ("dense/kernel", what save_weights
// writes) and Keras 3's variable paths, which put the model's name in front
// ("sequential/dense/kernel", from `{v.path: v.numpy() for v in model.weights}`). Returns
// the prefix in front of memopt's names: "" or, for instance, "sequential/".
inline std::string weight_name_prefix(const io::SafetensorsFile& f,
                                      const std::vector<ParameterSlice>& slices) {
  if (slices.empty() || f.find(slices.front().name)) return "";
  const std::string& first = slices.front().name;
  std::vector<std::string> prefixes;
  for (const io::TensorInfo& t : f.tensors())
    if (t.name.size() > first.size() + 1 && t.name.ends_with("/" + first))
      prefixes.push_back(t.name.substr(0, t.name.size() - first.size()));
  if (prefixes.size() == 1) return prefixes.front();
  const std::string found =
      prefixes.empty() ? f.names()
                       : fmt::format("several models' paths: {}", fmt::join(prefixes, ", "));
  throw f.fail(fmt::format(
      "load_weights: expected the model's tensors named as memopt writes them (\"{0}\", ...) "
      "or as Keras 3's variable paths, under the model's name (\"sequential/{0}\", ...: "
      "{{v.path: v.numpy() for v in model.weights}}), found {1}",
      first, found));
}

}  // namespace detail

/// Reads the weights of a file written by save_weights or save (or by any tool that uses
/// the same names and shapes): every weight, the non-trainable ones included, as
/// Model::set_weights takes them. Strict:
/// every tensor of the model must be present with its exact shape, as F32, F16 or BF16, and
/// no tensor other than `optimizer/...` may be extra. The names are memopt's
/// (`dense/kernel`) or Keras 3's variable paths (`sequential/dense/kernel`), so that a file
/// written from Keras 3 as `{v.path: v.numpy() for v in model.weights}` loads too.
///
/// ```cpp
/// model.set_weights(mo::checkpoint::load_weights<Model::spec>("w.safetensors"));
/// ```
inline std::vector<float> load_weights(const io::SafetensorsFile& f, const ModelLayout& layout) {
  std::vector<float> weights(layout.weight_count());
  const std::vector<ParameterSlice>& slices = layout.weights;
  const std::string prefix = detail::weight_name_prefix(f, slices);
  const std::string what =
      prefix.empty() ? std::string("load_weights")
                     : fmt::format("load_weights (Keras 3 variable paths, \"{}...\")", prefix);
  detail::read_slices(f, slices, weights, true, what, prefix);
  for (const io::TensorInfo& t : f.tensors()) {
    if (prefix.empty() && t.name.starts_with("optimizer/")) continue;
    bool known = false;
    for (const ParameterSlice& s : slices) known = known || prefix + s.name == t.name;
    if (!known) {
      std::string expected;
      for (const ParameterSlice& s : slices)
        expected += (expected.empty() ? "" : ", ") + prefix + s.name;
      throw f.fail(
          fmt::format("{}: unexpected tensor \"{}\" {} (expected only the "
                      "model's tensors: {})",
                      what, t.name, t.shape_string(), expected));
    }
  }
  return weights;
}

template <class Spec>
std::vector<float> load_weights(const io::SafetensorsFile& f) {
  return load_weights(f, layout_of<Spec>());
}

template <class Spec>
std::vector<float> load_weights(const std::filesystem::path& path) {
  return load_weights(io::SafetensorsFile::read(path), layout_of<Spec>());
}

/// Writes weights, optimizer state and metadata to `path`, atomically (Keras's save).
///
/// ```cpp
/// mo::checkpoint::TrainingState state;
/// state.weights = model.get_weights();
/// state.optimizer = "sgd";
/// mo::checkpoint::save<Model::spec>("run.safetensors", state);
/// ```
[[gnu::cold]] inline void save(const std::filesystem::path& path, const ModelLayout& layout,
                               const TrainingState& s) {
  const std::size_t n = layout.parameter_count;
  detail::check_weight_count(layout, s.weights, "save");
  if (s.optimizer_state.size() % n != 0)
    throw error(fmt::format("save: expected a multiple of {} optimizer values, found {}", n,
                            s.optimizer_state.size()));
  const std::size_t blocks = s.optimizer_state.size() / n;
  const auto slots = s.slot_names.empty() ? slot_names(s.optimizer, blocks) : s.slot_names;
  if (slots.size() != blocks)
    throw error(fmt::format("save: optimizer \"{}\" names {} slots, its state holds {} blocks",
                            s.optimizer, slots.size(), blocks));
  std::vector<io::TensorView> views;
  detail::add_weight_views(views, layout.weights, s.weights, "", "");
  views.push_back(io::TensorView::of("optimizer/iterations", {},
                                     std::span<const std::int64_t>(&s.iterations, 1)));
  for (std::size_t k = 0; k < slots.size(); ++k)
    detail::add_weight_views(views, layout.parameters,
                             std::span<const float>(s.optimizer_state).subspan(k * n, n),
                             "optimizer/", "/" + slots[k]);
  io::Metadata m = detail::base_metadata(layout, "weights+optimizer");
  m["optimizer"] = s.optimizer;
  m["epoch"] = std::to_string(s.epoch);
  m["epoch_batches"] = std::to_string(s.epoch_batches);
  m["step"] = std::to_string(s.iterations);
  if (s.learning_rate) m["learning_rate"] = fmt::format("{}", *s.learning_rate);
  // fmt's shortest round-trip form: from_chars gives back the same float, bit for bit.
  m["loss_scale"] = fmt::format("{}", s.loss_scale);
  m["loss_scale_good_steps"] = std::to_string(s.loss_scale_good_steps);
  if (s.accumulated_batches != 0 || s.accumulated_rows != 0) {
    m["accumulated_batches"] = std::to_string(s.accumulated_batches);
    m["accumulated_rows"] = std::to_string(s.accumulated_rows);
  }
  io::save_safetensors(path, views, m);
}

template <class Spec>
void save(const std::filesystem::path& path, const TrainingState& s) {
  save(path, layout_of<Spec>(), s);
}

/// Reads a full checkpoint written by save() for a model of `layout`'s type (`load<Spec>`:
/// of type `Spec`) under the same policy, compiled with `optimizer` (whose state blocks are named
/// `names`). Strict: the model hash, policy and optimizer must match, and every tensor must be
/// present, exact and F32.
[[gnu::cold]] inline TrainingState load(const io::SafetensorsFile& f, const ModelLayout& layout,
                                        std::string_view optimizer,
                                        const std::vector<std::string>& names) {
  const std::size_t n = layout.parameter_count;
  const std::string& contents = detail::required(f, "contents", "written by Model::save");
  if (contents != "weights+optimizer")
    throw f.fail(
        fmt::format("load: expected a full checkpoint (contents \"weights+optimizer\", "
                    "written by Model::save), found contents \"{}\"; use load_weights",
                    contents));
  const std::string& hash = detail::required(f, "model_hash", "the model's type");
  if (hash != layout.hash()) {
    const auto it = f.metadata().find("model");
    throw f.fail(fmt::format("load: expected model type {} ({}), found {} ({})", layout.hash(),
                             layout.description, hash,
                             it == f.metadata().end() ? "no description" : it->second));
  }
  const std::string& policy = detail::required(f, "policy", "the precision policy");
  if (policy != layout.policy)
    throw f.fail(
        fmt::format("load: expected policy {}, found {} (load_weights reads the weights "
                    "under any policy)",
                    layout.policy, policy));
  const std::string& opt = detail::required(f, "optimizer", "the optimizer's name");
  if (opt != optimizer)
    throw f.fail(
        fmt::format("load: expected optimizer \"{}\" (as compiled), found \"{}\"", optimizer, opt));

  TrainingState s;
  s.optimizer = opt;
  s.weights.resize(layout.weight_count());
  detail::read_slices(f, layout.weights, s.weights, false, "load");

  const std::vector<ParameterSlice>& slices = layout.parameters;
  const std::size_t slots = names.size();
  s.slot_names = names;
  s.optimizer_state.resize(slots * n);
  std::size_t expected_tensors = layout.weights.size() + 1;
  for (std::size_t k = 0; k < names.size(); ++k) {
    detail::read_slices(f, slices, std::span<float>(s.optimizer_state).subspan(k * n, n), false,
                        "load", "optimizer/", "/" + names[k]);
    expected_tensors += slices.size();
  }

  const io::TensorInfo* it = f.find("optimizer/iterations");
  if (!it || !it->shape.empty() || it->dtype != io::Dtype::i64)
    throw f.fail(
        fmt::format("load: expected tensor \"optimizer/iterations\" I64 [], found {}",
                    it ? fmt::format("{} {}", io::dtype_name(it->dtype), it->shape_string())
                       : std::string("none")));
  s.iterations = f.int64s("optimizer/iterations").front();
  if (s.iterations < 0)
    throw f.fail(fmt::format(
        "load: updates applied (tensor \"optimizer/iterations\"): expected >= 0, found {}",
        s.iterations));
  const std::int64_t step =
      detail::parse_int(detail::required(f, "step", "updates applied"), f, "step");
  if (step != s.iterations)
    throw f.fail(
        fmt::format("load: __metadata__ step is {} but optimizer/iterations is {}; "
                    "expected them equal",
                    step, s.iterations));
  if (f.tensors().size() != expected_tensors)
    for (const io::TensorInfo& t : f.tensors()) {
      bool known = t.name == "optimizer/iterations";
      for (const ParameterSlice& p : layout.weights) known = known || t.name == p.name;
      for (const ParameterSlice& p : slices) {
        for (const auto& slot : names)
          known = known || t.name == "optimizer/" + p.name + "/" + slot;
      }
      if (!known)
        throw f.fail(
            fmt::format("load: unexpected tensor \"{}\" {} (expected the model's weights "
                        "and {} optimizer state)",
                        t.name, t.shape_string(), opt));
    }

  const std::int64_t epoch =
      detail::parse_int(detail::required(f, "epoch", "epochs completed"), f, "epoch");
  if (epoch < 0 || epoch > 1'000'000'000)
    throw f.fail(fmt::format(
        "load: epochs completed (__metadata__ \"epoch\"): expected 0 to 1000000000, found {}",
        epoch));
  s.epoch = static_cast<int>(epoch);
  // Absent from checkpoints written before mid-epoch resume: they resumed at an epoch's start.
  if (const auto b = f.metadata().find("epoch_batches"); b != f.metadata().end()) {
    const std::int64_t batches = detail::parse_int(b->second, f, "epoch_batches");
    if (batches < 0 || batches > std::numeric_limits<std::int32_t>::max())
      throw f.fail(fmt::format(
          "load: batches of the epoch trained (__metadata__ \"epoch_batches\"): expected 0 to "
          "{}, found {}",
          std::numeric_limits<std::int32_t>::max(), batches));
    s.epoch_batches = static_cast<int>(batches);
  }
  if (const auto lr = f.metadata().find("learning_rate"); lr != f.metadata().end())
    s.learning_rate = detail::parse_double(lr->second, f, "learning_rate");
  const std::string& scale = detail::required(f, "loss_scale", "the loss scale");
  s.loss_scale = detail::parse_float(scale, f, "loss_scale");
  if (!(std::isfinite(s.loss_scale) && s.loss_scale > 0.0f))
    throw f.fail(fmt::format(
        "load: loss scale (__metadata__ \"loss_scale\"): expected a positive finite number, "
        "found {}",
        scale));
  // The upper bound, the growth interval, is the model's: check_loss_scale() tests it.
  const std::int64_t good = detail::parse_int(
      detail::required(f, "loss_scale_good_steps", "steps since the scale last grew"), f,
      "loss_scale_good_steps");
  if (good < 0 || good > std::numeric_limits<std::int32_t>::max())
    throw f.fail(fmt::format(
        "load: loss scale's good steps (__metadata__ \"loss_scale_good_steps\"): expected 0 "
        "to {}, found {}",
        std::numeric_limits<std::int32_t>::max(), good));
  s.loss_scale_good_steps = static_cast<std::int32_t>(good);
  // Absent between updates and without gradient accumulation; the model checks them against
  // its gradient_accumulation_steps (GradientAccumulation::restore).
  if (const auto b = f.metadata().find("accumulated_batches"); b != f.metadata().end())
    s.accumulated_batches = detail::parse_int(b->second, f, "accumulated_batches");
  if (const auto r = f.metadata().find("accumulated_rows"); r != f.metadata().end()) {
    const std::int64_t rows = detail::parse_int(r->second, f, "accumulated_rows");
    if (rows < 0)
      throw f.fail(fmt::format(
          "load: rows of the accumulated batches (__metadata__ \"accumulated_rows\"): expected "
          ">= 0, found {}",
          rows));
    s.accumulated_rows = static_cast<std::uint64_t>(rows);
  }
  return s;
}

template <class Spec>
TrainingState load(const io::SafetensorsFile& f, std::string_view optimizer,
                   const std::vector<std::string>& names) {
  return load(f, layout_of<Spec>(), optimizer, names);
}
template <class Spec>
TrainingState load(const io::SafetensorsFile& f, std::string_view optimizer, std::size_t slots) {
  return load(f, layout_of<Spec>(), optimizer, slot_names(optimizer, slots));
}
template <class Spec>
TrainingState load(const std::filesystem::path& path, std::string_view optimizer,
                   const std::vector<std::string>& names) {
  return load(io::SafetensorsFile::read(path), layout_of<Spec>(), optimizer, names);
}
template <class Spec>
TrainingState load(const std::filesystem::path& path, std::string_view optimizer,
                   std::size_t slots) {
  return load(io::SafetensorsFile::read(path), layout_of<Spec>(), optimizer,
              slot_names(optimizer, slots));
}

}  // namespace memopt::checkpoint
