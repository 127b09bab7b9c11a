#pragma once
// Keras's .h5 weight files, apart from the HDF5 library: the layers and weights such a file
// holds; their match to a memopt model by Keras's rules (checkpoint::keras_weights); and the
// way to load a file from elsewhere, mo::load_keras_weights_isolated, which has another
// process read it. Needs no HDF5 in this program (io/keras_h5.hpp, target memopt::hdf5,
// reads a file in this process).
//
// Why another process: HDF5 does not defend itself against hostile files (of 450 mutated .h5
// files, 2 crashed the reading process inside libhdf5), and memopt cannot fix HDF5. The tool
// memopt_keras_h5 (tools/memopt_keras_h5.cpp, built and installed with memopt::hdf5) reads
// the file and writes its weights to a pipe as a safetensors stream, which memopt's strict
// safetensors reader checks here: a crash, a hang or a flood of output over there becomes a
// memopt::error here, naming the file. The tool is started with posix_spawn, an exec: no
// library code runs in a copy of this process, so this is safe in a program that runs
// threads (a bare fork() would run HDF5 in a child that inherited other threads' locks).
//
// ```cpp
// #include <memopt/io/keras_weights.hpp>
// auto model = mo::Model<Net, mo::Input<784>>{0};
// mo::load_keras_weights_isolated(model, "downloaded.h5");  // memopt::error if it is bad
// ```

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/json_value.hpp"
#include "memopt/io/json_writer.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/model/spec.hpp"

extern char** environ;  // POSIX: the environment the tool inherits

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

/// The `format` that memopt_keras_h5's output names in its `__metadata__`.
inline constexpr std::string_view keras_h5_tensors_format = "memopt_keras_h5";

/// A Keras weight file's layers and weights as a safetensors file, which is what the tool
/// memopt_keras_h5 writes: each weight a F32 tensor named by its path in the .h5 file, in the
/// file's order; `__metadata__` holds `format` ("memopt_keras_h5"), `layout` ("keras3" or
/// "legacy") and `layers`, JSON `[[layer, [[path, weight name], ...]], ...]`. `values[k]` are
/// the k-th weight's, counted across layers.
///
/// ```cpp
/// using mo::io::KerasH5Layer, mo::io::KerasH5Layout;
/// const std::vector<KerasH5Layer> layers{{"dense", {{"layers/dense/vars/0", "0", {784, 128}},
///                                                   {"layers/dense/vars/1", "1", {128}}}}};
/// const std::vector<std::vector<float>> values{std::vector<float>(784 * 128),
///                                              std::vector<float>(128)};
/// std::vector<std::byte> bytes =
///     mo::io::encode_keras_h5_tensors(KerasH5Layout::keras3, layers, values);
/// ```
[[gnu::cold]] inline std::vector<std::byte> encode_keras_h5_tensors(
    KerasH5Layout layout, const std::vector<KerasH5Layer>& layers,
    const std::vector<std::vector<float>>& values) {
  JsonWriter json;
  std::vector<TensorView> tensors;
  json.begin_array();
  for (const KerasH5Layer& layer : layers) {
    json.begin_array().value(layer.name).begin_array();
    for (const KerasH5Weight& w : layer.weights) {
      json.begin_array().value(w.path).value(w.name).end_array();
      const std::size_t k = tensors.size();
      if (k >= values.size() || values[k].size() != w.elements())
        throw error(fmt::format("encode_keras_h5_tensors: {}: expected {} values, found {}", w.path,
                                w.elements(),
                                k < values.size() ? values[k].size() : std::size_t{0}));
      tensors.push_back(TensorView::of(w.path, w.shape, std::span<const float>(values[k])));
    }
    json.end_array().end_array();
  }
  json.end_array();
  if (tensors.size() != values.size())
    throw error(fmt::format("encode_keras_h5_tensors: expected {} tensors' values, found {}",
                            tensors.size(), values.size()));
  return encode_safetensors(tensors,
                            {{"format", std::string(keras_h5_tensors_format)},
                             {"layout", layout == KerasH5Layout::keras3 ? "keras3" : "legacy"},
                             {"layers", std::move(json).text()}});
}

/// What memopt_keras_h5 wrote (encode_keras_h5_tensors), read back and checked: the same
/// layers(), layout() and read_floats() as io::KerasH5File, with no HDF5 involved.
///
/// ```cpp
/// auto f = mo::io::KerasH5Tensors::read("model.keras_h5.safetensors");  // converted once
/// model.set_weights(mo::checkpoint::keras_weights<Model::spec>(f));
/// ```
class KerasH5Tensors {
 public:
  /// Checks `bytes`; `source` (the .h5 file they came from) names it in error messages.
  static KerasH5Tensors parse(std::vector<std::byte> bytes, std::string source) {
    SafetensorsFile f = SafetensorsFile::parse(std::move(bytes), source);
    return KerasH5Tensors(std::move(f), std::move(source));
  }
  static KerasH5Tensors read(const std::filesystem::path& path) {
    return KerasH5Tensors(SafetensorsFile::read(path), path.string());
  }

  const std::string& source() const { return source_; }
  KerasH5Layout layout() const { return layout_; }
  const std::vector<KerasH5Layer>& layers() const { return layers_; }

  /// Reads `w`'s values into `out` (exactly w.elements() floats).
  void read_floats(const KerasH5Weight& w, std::span<float> out) const {
    file_.read_floats(file_.at(w.path), out);
  }

  /// An error whose message starts with the file's name.
  error fail(const std::string& what) const { return error("keras h5 " + source_ + ": " + what); }

 private:
  KerasH5Tensors(SafetensorsFile f, std::string source)
      : file_(std::move(f)), source_(std::move(source)) {
    const auto meta = [&](std::string_view key) -> const std::string& {
      const auto it = file_.metadata().find(key);
      if (it == file_.metadata().end())
        throw fail(
            fmt::format("expected memopt_keras_h5's output, with __metadata__ \"{}\"; "
                        "found none",
                        key));
      return it->second;
    };
    if (meta("format") != keras_h5_tensors_format)
      throw fail(fmt::format("expected __metadata__ format \"{}\", found \"{}\"",
                             keras_h5_tensors_format, meta("format")));
    const std::string& layout = meta("layout");
    if (layout != "keras3" && layout != "legacy")
      throw fail(fmt::format("expected __metadata__ layout \"keras3\" or \"legacy\", found \"{}\"",
                             layout));
    layout_ = layout == "keras3" ? KerasH5Layout::keras3 : KerasH5Layout::legacy;
    const JsonValue layers = parse_json(meta("layers"));
    const auto bad = [&](const JsonValue& v) {
      return fail("__metadata__ layers: expected [[layer, [[path, name], ...]], ...], found " +
                  v.dump());
    };
    if (!layers.is_array()) throw bad(layers);
    std::size_t tensors = 0;
    for (const JsonValue& l : layers.items) {
      if (!l.is_array() || l.items.size() != 2 || !l.items[0].is_string() || !l.items[1].is_array())
        throw bad(l);
      KerasH5Layer layer{l.items[0].text, {}};
      for (const JsonValue& w : l.items[1].items) {
        if (!w.is_array() || w.items.size() != 2 || !w.items[0].is_string() ||
            !w.items[1].is_string())
          throw bad(w);
        const TensorInfo* t = file_.find(w.items[0].text);
        if (!t)
          throw fail(fmt::format("expected a tensor \"{}\" (layer {}), found none", w.items[0].text,
                                 layer.name));
        if (t->dtype != Dtype::f32)
          throw fail(
              fmt::format("tensor \"{}\": expected F32, found {}", t->name, dtype_name(t->dtype)));
        layer.weights.push_back({t->name, w.items[1].text, t->shape});
        ++tensors;
      }
      layers_.push_back(std::move(layer));
    }
    if (tensors != file_.tensors().size())
      throw fail(fmt::format("expected the {} tensors that __metadata__ layers names, found {}",
                             tensors, file_.tensors().size()));
  }

  SafetensorsFile file_;
  std::string source_;
  KerasH5Layout layout_ = KerasH5Layout::keras3;
  std::vector<KerasH5Layer> layers_;
};

/// How load_keras_weights_isolated runs the tool that reads the file.
struct IsolatedReadOptions {
  /// The tool: a path, or a name looked up in PATH. Empty: the environment variable
  /// MEMOPT_KERAS_H5_HELPER, else the path memopt::hdf5 compiled in (MEMOPT_KERAS_H5_HELPER,
  /// the tool memopt built or installed), else "memopt_keras_h5" in PATH.
  std::string helper{};
  /// The tool is stopped (SIGKILL) and memopt::error raised after this long; zero: no limit.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  /// The most values the tool reads; zero: twice the model's weight_count plus 2^20, room
  /// enough for a file that almost fits to be told apart by its shapes (a file that fits
  /// holds weight_count values), small enough to bound the tool's memory by the model's.
  std::uint64_t max_values = 0;
  /// The most bytes of output taken; zero: 4 bytes a value plus 16 MiB of names.
  std::uint64_t max_bytes = 0;
};

namespace detail {

// A file descriptor closed once.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

inline std::string helper_path(const IsolatedReadOptions& o) {
  if (!o.helper.empty()) return o.helper;
  if (const char* env = std::getenv("MEMOPT_KERAS_H5_HELPER"); env && *env) return env;
#ifdef MEMOPT_KERAS_H5_HELPER
  return MEMOPT_KERAS_H5_HELPER;
#else
  return "memopt_keras_h5";
#endif
}

inline std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* d = ::sigdescr_np(sig)) return fmt::format("signal {} ({})", sig, d);
#endif
  return fmt::format("signal {}", sig);
}

// The tool's output and how it ended.
struct ToolRun {
  std::vector<std::byte> out;
  std::string err;
  int status = 0;
  bool status_known = true;  // false when SIGCHLD is ignored and the child was reaped for us
};

// Runs `argv` with stdin from /dev/null, reading its stdout and (the first 64 KiB of) its
// stderr until both close; raises memopt::error (`what` names the file) on a timeout or more
// than `max_bytes` of output, having killed and reaped the child.
[[gnu::cold]] inline ToolRun run_tool(const std::vector<std::string>& argv,
                                      const IsolatedReadOptions& o, std::uint64_t max_bytes,
                                      const std::string& what) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw error(what + ": pipe: " + errno_message(errno));
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw error(what + ": pipe: " + errno_message(errno));
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  struct Actions {
    posix_spawn_file_actions_t* a;
    ~Actions() { posix_spawn_file_actions_destroy(a); }
  } destroy{&actions};
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.fd, 1);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, err_write.fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // none of this process's files
#endif
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  // posix_spawnp: the tool may be a name in PATH. It returns the error rather than setting errno.
  if (const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
      rc != 0)
    throw error(fmt::format(
        "{}: cannot start the reader {} ({}): build or install memopt_keras_h5 (with "
        "memopt::hdf5), or name it in IsolatedReadOptions::helper or MEMOPT_KERAS_H5_HELPER",
        what, argv[0], errno_message(rc)));
  out_write.reset();
  err_write.reset();

  ToolRun run;
  const auto stop = [&](const std::string& why) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw error(fmt::format("{}: the reader {} {}; it was stopped", what, argv[0], why));
  };
  // Milliseconds left before the timeout (-1: none), having stopped the tool at zero.
  const auto start = std::chrono::steady_clock::now();
  const auto time_left = [&]() -> int {
    if (o.timeout.count() <= 0) return -1;
    const auto left = o.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - start);
    if (left.count() <= 0) stop(fmt::format("did not finish within {} ms", o.timeout.count()));
    return static_cast<int>(std::min<std::int64_t>(left.count(), 60'000));
  };
  std::vector<std::byte> chunk(1 << 16);
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? out_read.fd : -1, POLLIN, 0},
                     {err_open ? err_read.fd : -1, POLLIN, 0}};
    const int wait_ms = time_left();
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      stop("could not be watched (poll: " + errno_message(errno) + ")");
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      const ssize_t n = ::read(fds[k].fd, chunk.data(), chunk.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        (k == 0 ? out_open : err_open) = false;
        continue;
      }
      const auto got = static_cast<std::size_t>(n);
      if (k == 0) {
        if (run.out.size() + got > max_bytes)
          stop(fmt::format("wrote more than {} bytes, more than the model's weights could need",
                           max_bytes));
        run.out.insert(run.out.end(), chunk.begin(), chunk.begin() + n);
      } else if (run.err.size() < 65536) {
        run.err.append(reinterpret_cast<const char*>(chunk.data()),
                       std::min<std::size_t>(got, 65536 - run.err.size()));
      }
    }
  }
  // Both pipes are closed, so the tool is ending (or has shut them and hangs: the timeout
  // holds here too).
  for (;;) {
    const pid_t done = ::waitpid(pid, &run.status, WNOHANG);
    if (done == pid) return run;
    if (done < 0 && errno == ECHILD) {
      run.status_known = false;
      return run;
    }
    if (done < 0 && errno != EINTR)
      stop(fmt::format("could not be waited for ({})", errno_message(errno)));
    (void)time_left();
    ::usleep(1000);
  }
}

// The tool's message without its trailing newline.
inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace detail

/// Reads the Keras weight file `path` in another process (the tool memopt_keras_h5; see
/// this header's comment), at most `max_values` values (IsolatedReadOptions::max_values is
/// load_keras_weights_isolated's), and returns what it found, checked.
/// Raises memopt::error, naming the file, when the tool cannot start, fails, is killed by a
/// signal (HDF5 crashed on the file), runs past the timeout or writes too much.
///
/// ```cpp
/// auto f = mo::io::read_keras_h5_isolated("model.h5", {}, Model::weight_count);
/// ```
[[gnu::cold]] inline KerasH5Tensors read_keras_h5_isolated(const std::filesystem::path& path,
                                                           const IsolatedReadOptions& o,
                                                           std::uint64_t max_values) {
  const std::string what = "keras h5 " + path.string();
  const std::string helper = detail::helper_path(o);
  const std::uint64_t limit = o.max_bytes ? o.max_bytes : 4 * max_values + (16u << 20);
  detail::ToolRun run = detail::run_tool(
      {helper, "--max-values", std::to_string(max_values), "--", path.string(), "-"}, o, limit,
      what);
  const std::string message = detail::trimmed(std::move(run.err));
  if (run.status_known && WIFSIGNALED(run.status))
    throw error(fmt::format(
        "{}: the reader {} was killed by {} while reading it: the file is damaged or hostile "
        "(this process is unharmed){}",
        what, helper, detail::signal_name(WTERMSIG(run.status)),
        message.empty() ? "" : "; it said: " + message));
  if (run.status_known && (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0))
    throw error(message.empty() ? fmt::format("{}: the reader {} failed (exit status {})", what,
                                              helper, WEXITSTATUS(run.status))
                                : message);  // the tool's own memopt::error, naming the file
  try {
    return KerasH5Tensors::parse(std::move(run.out), path.string());
  } catch (const error& e) {
    throw error(fmt::format("{} (the output of the reader {}{})", e.what(), helper,
                            message.empty() ? "" : ", which said: " + message));
  }
}

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

/// The weights of a Keras weight file (an io::KerasH5File read in this process, or an
/// io::KerasH5Tensors from the tool memopt_keras_h5) for a model of type `Spec`: every
/// weight, the non-trainable ones (moving statistics) included, as Model::set_weights takes
/// them. Strict: each of the model's layers with weights must find its layer in the file
/// with as many weights, of the same shapes (and, in a legacy file, names); the file may
/// have no other layer with weights.
///
/// ```cpp
/// model.set_weights(mo::checkpoint::keras_weights<Model::spec>(
///     mo::io::KerasH5Tensors::read("model.keras_h5.safetensors")));
/// ```
template <class Spec, class File>
std::vector<float> keras_weights(const File& f) {
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

}  // namespace memopt::checkpoint

namespace memopt {

/// Loads the Keras HDF5 weight file `path` into `model` as mo::load_keras_weights does (the
/// same layouts, the same strict match, the moving statistics too), but reads the file in
/// another process, the tool memopt_keras_h5: for `.h5` files from elsewhere, which HDF5
/// cannot read safely. Whatever the file does to that process (a crash inside libhdf5, a
/// hang, an endless output) becomes a memopt::error naming the file; the model is changed
/// only when every weight was read and matched. Safe to call from a program that runs
/// threads (the tool is started by posix_spawn). Needs the tool, not HDF5, in this program:
/// see IsolatedReadOptions::helper for where it is looked for.
///
/// ```cpp
/// #include <memopt/io/keras_weights.hpp>
/// auto model = mo::Model<Net, mo::Input<784>>{0};
/// mo::load_keras_weights_isolated(model, "downloaded.h5");
/// mo::load_keras_weights_isolated(model, "big.h5", {.timeout = std::chrono::minutes(30)});
/// ```
template <class M>
requires requires(M& m, std::vector<float> v) {
  typename M::spec;
  m.set_weights(v);
}
void load_keras_weights_isolated(M& model, const std::filesystem::path& path,
                                 const io::IsolatedReadOptions& options = {}) {
  using Spec = typename M::spec;
  const std::uint64_t values =
      options.max_values ? options.max_values : 2 * std::uint64_t{Spec::weight_count} + (1u << 20);
  model.set_weights(
      checkpoint::keras_weights<Spec>(io::read_keras_h5_isolated(path, options, values)));
}

}  // namespace memopt
