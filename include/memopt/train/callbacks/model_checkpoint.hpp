#pragma once
// callbacks::ModelCheckpoint: saves the model as it trains, with Keras's options and meaning.

#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/args.h>
#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/monitor.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

namespace detail {

// The field names of an fmt template, "{epoch:02d}-{val_loss:.2f}" -> epoch, val_loss. An
// empty or numeric field ("{}", "{0}") is returned as is, and rejected by the caller.
inline std::vector<std::string> template_fields(std::string_view t) {
  std::vector<std::string> fields;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '}' && i + 1 < t.size() && t[i + 1] == '}') {
      ++i;
      continue;
    }
    if (t[i] != '{') continue;
    if (i + 1 < t.size() && t[i + 1] == '{') {
      ++i;
      continue;
    }
    const std::size_t end = t.find_first_of(":}!", i + 1);
    if (end == std::string_view::npos) break;  // unclosed: fmt reports it
    fields.emplace_back(t.substr(i + 1, end - i - 1));
    i = end;
  }
  return fields;
}

}  // namespace detail

/// Formats a checkpoint path: fmt syntax, 1-based `{epoch}`, `{batch}` when saving every N
/// batches, and any logged value by name. A field with no value raises memopt::error naming it.
///
/// ```cpp
/// auto p = mo::callbacks::format_filepath("ckpt-{epoch:02d}-{val_loss:.2f}.safetensors", 3,
///                                         std::nullopt, {{"val_loss", 0.4567}});
/// // "ckpt-03-0.46.safetensors"
/// ```
[[gnu::cold]] inline std::string format_filepath(std::string_view pattern, int epoch,
                                                 std::optional<int> batch, const Logs& logs) {
  const auto available = [&] {
    std::string s = "epoch";
    if (batch) s += ", batch";
    for (const auto& [k, v] : logs) s += ", " + k;
    return s;
  };
  for (const std::string& f : detail::template_fields(pattern)) {
    const bool known = f == "epoch" || (batch && f == "batch") || logs.contains(f);
    if (!known)
      throw error(
          fmt::format("ModelCheckpoint: filepath \"{}\" uses {{{}}}, which is not a "
                      "logged value; expected one of: {}",
                      pattern, f.empty() ? std::string() : f, available()));
  }
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("epoch", epoch));
  if (batch) args.push_back(fmt::arg("batch", *batch));
  for (const auto& [k, v] : logs) args.push_back(fmt::arg(k.c_str(), v));
  try {
    return fmt::vformat(pattern, args);
  } catch (const fmt::format_error& e) {
    throw error(fmt::format("ModelCheckpoint: cannot format filepath \"{}\" with epoch {}{}: {}",
                            pattern, epoch, batch ? fmt::format(", batch {}", *batch) : "",
                            e.what()));
  }
}

/// Writes a model in another format at a checkpoint's path (ModelCheckpoint's `onnx_export`;
/// `memopt::onnx_export<Model>()` in memopt/io/onnx.hpp makes the ONNX one).
using ModelExport = std::function<void(const TrainingContext&, const std::filesystem::path&)>;

/// Keras's `ModelCheckpoint`: saves the model (or its weights) as safetensors, atomically,
/// at the end of every epoch or every N batches, optionally only when the monitored value
/// improves; on request also (or only) its inference graph as ONNX.
///
/// ```cpp
/// mo::callbacks::ModelCheckpoint ckpt{{.filepath = "ckpt-{epoch:02d}.safetensors",
///                                      .monitor = "val_loss", .save_best_only = true,
///                                      .save_weights_only = true}};
/// model.fit(batches, {.epochs = 10, .validation_data = val, .callbacks = {&ckpt}});
///
/// // With memopt/io/onnx.hpp and memopt::onnx, the graph beside each checkpoint:
/// // .onnx_filepath = "model-{epoch:02d}.onnx", .onnx_export = mo::onnx_export<Model>()
/// ```
class ModelCheckpoint : public Callback {
 public:
  struct Options {
    /// fmt template: `{epoch:02d}` (1-based), `{batch}` (1-based, with save_freq N), and
    /// any logged value, e.g. `{val_loss:.2f}`. May be empty when `onnx_filepath` is set:
    /// then only the ONNX graph is written.
    std::string filepath{};
    std::string monitor = "val_loss";
    /// 0 quiet, 1 a line per save (or per skipped save with save_best_only).
    int verbose = 0;
    /// Save only when `monitor` is strictly better than the best so far.
    bool save_best_only = false;
    /// Weights only (Model::save_weights) or everything to resume (Model::save).
    bool save_weights_only = false;
    /// "auto", "min" or "max".
    std::string mode = "auto";
    /// "epoch", or a number of batches between saves.
    std::variant<std::string, int> save_freq = std::string("epoch");
    /// The best value to beat at first, for save_best_only.
    std::optional<double> initial_value_threshold{};
    /// Also write the inference graph as ONNX at each save (the same saves, save_best_only
    /// included), to this template, formatted as `filepath`. A second path rather than a
    /// format switch: a run keeps what resumes it and what deploys it side by side.
    std::string onnx_filepath{};
    /// What writes it: `memopt::onnx_export<Model>({.precision = ...})` from
    /// memopt/io/onnx.hpp (target memopt::onnx), so that this callback needs no ONNX library.
    ModelExport onnx_export{};
  };

  explicit ModelCheckpoint(Options o)
      : o_(std::move(o)),
        monitor_(o_.monitor, o_.mode, 0.0, "ModelCheckpoint"),
        best_(o_.initial_value_threshold) {
    if (o_.onnx_filepath.empty() && o_.onnx_export)
      throw error("ModelCheckpoint: onnx_export expected an onnx_filepath to write to, found \"\"");
    if (o_.filepath.empty() && o_.onnx_filepath.empty())
      throw error("ModelCheckpoint: expected a filepath (or an onnx_filepath), found \"\"");
    if (!o_.onnx_filepath.empty() && !o_.onnx_export)
      throw error("ModelCheckpoint: onnx_filepath \"" + o_.onnx_filepath +
                  "\" expected an onnx_export to write it (memopt::onnx_export<Model>() from "
                  "memopt/io/onnx.hpp), found none");
    if (const auto* s = std::get_if<std::string>(&o_.save_freq)) {
      if (*s != "epoch")
        throw error(
            "ModelCheckpoint: expected save_freq \"epoch\" or a number of batches, "
            "found \"" +
            *s + "\"");
    } else if (std::get<int>(o_.save_freq) <= 0) {
      throw error(fmt::format("ModelCheckpoint: expected save_freq > 0 batches, found {}",
                              std::get<int>(o_.save_freq)));
    }
  }

  /// The best monitored value seen so far (or the initial threshold).
  std::optional<double> best() const { return best_; }
  /// The files written, in order.
  const std::vector<std::filesystem::path>& saved() const { return saved_; }

  void on_train_begin(const Logs& /*logs*/) override { warned_missing_ = false; }

  void on_epoch_begin(int epoch, const Logs& /*logs*/) override { epoch_ = epoch; }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (std::holds_alternative<std::string>(o_.save_freq)) save(epoch, std::nullopt, logs);
  }

  void on_train_batch_end(int batch, const BatchLogs& logs) override {
    const auto* every = std::get_if<int>(&o_.save_freq);
    if (!every) return;
    // Keras counts batches across epochs: a batch index at or below the last one seen
    // starts a new epoch.
    seen_ += last_batch_ && batch > *last_batch_ ? batch - *last_batch_ : batch + 1;
    last_batch_ = batch;
    if (seen_ < *every) return;
    seen_ = 0;
    Logs l{{"loss", logs.loss}};
    if (logs.has_accuracy) l["accuracy"] = logs.accuracy;
    save(epoch_, batch, l);
  }

 private:
  void save(int epoch, std::optional<int> batch, const Logs& logs) {
    const auto format = [&](const std::string& pattern) -> std::filesystem::path {
      if (pattern.empty()) return {};
      return format_filepath(pattern, epoch + 1,
                             batch ? std::optional<int>(*batch + 1) : std::nullopt, logs);
    };
    const std::filesystem::path path = format(o_.filepath);
    const std::filesystem::path onnx = format(o_.onnx_filepath);
    if (!should_save(epoch, logs,
                     path.empty()   ? onnx.string()
                     : onnx.empty() ? path.string()
                                    : path.string() + " and " + onnx.string()))
      return;
    if (!model_) throw error("ModelCheckpoint: no model; pass it in fit's callbacks");
    if (!chief()) return;  // data parallelism: rank 0 alone writes (its weights are everyone's)
    if (!path.empty()) {
      if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
      if (o_.save_weights_only)
        model_->save_weights(path);
      else
        model_->save(path);
      saved_.push_back(path);
    }
    if (!onnx.empty()) {
      if (onnx.has_parent_path()) std::filesystem::create_directories(onnx.parent_path());
      o_.onnx_export(*model_, onnx);
      saved_.push_back(onnx);
    }
  }

  bool chief() const { return !model_ || model_->is_chief(); }

  // `path`: what the save writes, for the messages.
  bool should_save(int epoch, const Logs& logs, const std::string& path) {
    if (!o_.save_best_only) {
      if (o_.verbose > 0 && chief())
        std::printf("\nEpoch %d: saving model to %s\n", epoch + 1, path.c_str());
      return true;
    }
    const auto it = logs.find(monitor_.name());
    if (it == logs.end()) {
      // Keras 3 warns ("Can save best model only with val_loss available.") and then saves
      // at every save point, as without save_best_only. Do the same, but say so, once a run.
      if (!warned_missing_) {
        warned_missing_ = true;
        const auto* every = std::get_if<int>(&o_.save_freq);
        const std::string when =
            every ? fmt::format("every {} batches", *every) : std::string("every epoch");
        fmt::print(stderr,
                   "ModelCheckpoint: save_best_only cannot tell the best model: {}. Saving {} "
                   "instead, as without save_best_only (as Keras 3 does), starting with {}. "
                   "Pass validation_data to fit, or monitor a value the logs have.\n",
                   monitor_.missing_from(logs), when, path);
      }
      if (o_.verbose > 0 && chief())
        fmt::print("\nEpoch {}: saving model to {} ({} not available)\n", epoch + 1, path,
                   monitor_.name());
      return true;
    }
    const double current = it->second;
    const std::string best = best_ ? fmt::format("{:.5f}", *best_) : "None";
    if (monitor_.is_improvement(current, best_)) {
      if (o_.verbose > 0 && chief())
        fmt::print("\nEpoch {}: {} improved from {} to {:.5f}, saving model to {}\n", epoch + 1,
                   monitor_.name(), best, current, path);
      best_ = current;
      return true;
    }
    if (o_.verbose > 0 && chief())
      fmt::print("\nEpoch {}: {} did not improve from {}\n", epoch + 1, monitor_.name(), best);
    return false;
  }

  Options o_;
  Monitor monitor_;
  std::optional<double> best_;
  std::optional<int> last_batch_{};
  int seen_ = 0;
  int epoch_ = 0;
  bool warned_missing_ = false;  // the missing-monitor message is printed once a run
  std::vector<std::filesystem::path> saved_;
};

}  // namespace memopt::callbacks
