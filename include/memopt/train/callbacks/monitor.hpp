#pragma once
// Monitor: which direction of a logged value counts as better, as Keras's MonitorCallback.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `mode` for callbacks that watch a value: "min", "max", or "auto", which is min for
/// losses and errors (loss, val_loss, mean_absolute_error, ...) and max for accuracies, auc,
/// precision and recall (val_accuracy, sparse_top_k_categorical_accuracy, val_auc, ...). Any
/// other name under "auto" is an error that asks for a mode.
///
/// ```cpp
/// mo::callbacks::Monitor m("val_accuracy", "auto", 0.0, "EarlyStopping");
/// bool better = m.is_improvement(0.91, 0.90);  // true: accuracy is maximised
/// ```
class Monitor {
 public:
  Monitor(std::string monitor, std::string_view mode, double min_delta, const char* who)
      : name_(std::move(monitor)) {
    if (mode == "min") {
      minimise_ = true;
    } else if (mode == "max") {
      minimise_ = false;
    } else if (mode == "auto") {
      const std::string_view metric =
          std::string_view(name_).substr(std::string_view(name_).starts_with("val_") ? 4 : 0);
      const auto has = [&](std::string_view part) {
        return metric.find(part) != std::string_view::npos;
      };
      // Keras 3 asks each metric its direction; these are the directions of memopt's.
      if (metric.ends_with("loss") || metric.ends_with("error") || has("crossentropy"))
        minimise_ = true;
      else if (has("acc") || has("auc") || has("precision") || has("recall"))
        minimise_ = false;
      else
        throw error(std::string(who) + ": mode \"auto\" cannot tell whether \"" + name_ +
                    "\" should be minimised or maximised; expected a loss or an error (minimised), "
                    "or an accuracy, auc, precision or recall (maximised), found \"" +
                    name_ + "\": pass .mode = \"min\" or \"max\"");
    } else {
      throw error(std::string(who) + ": expected mode \"auto\", \"min\" or \"max\", found \"" +
                  std::string(mode) + "\"");
    }
    // Keras keeps |min_delta| and subtracts it with the sign that makes improvement harder.
    delta_ = (min_delta < 0 ? -min_delta : min_delta) * (minimise_ ? -1.0 : 1.0);
  }

  const std::string& name() const { return name_; }

  /// Why `logs` cannot be judged: the monitored name is missing. Names what the logs have,
  /// and for a "val_" name, where such values come from.
  ///
  /// ```cpp
  /// // "\"val_loss\" is not in the logs (they have: accuracy, loss; val_ values exist only
  /// //  when fit is given validation_data)"
  /// const mo::Logs logs{{"loss", 0.3}, {"accuracy", 0.9}};
  /// const mo::callbacks::Monitor monitor("val_loss", "auto", 0.0, "EarlyStopping");
  /// std::string why = monitor.missing_from(logs);
  /// ```
  std::string missing_from(const Logs& logs) const {
    std::string have;
    for (const auto& [k, v] : logs) have += (have.empty() ? "" : ", ") + k;
    std::string s = "\"" + name_ + "\" is not in the logs (they have: " +
                    (have.empty() ? std::string("nothing") : have);
    if (std::string_view(name_).starts_with("val_"))
      s += "; val_ values exist only when fit is given validation_data";
    return s + ")";
  }
  bool minimise() const { return minimise_; }

  /// Whether `current` beats `reference` by more than min_delta (strictly); anything beats
  /// no reference. A NaN is never an improvement.
  bool is_improvement(double current, std::optional<double> reference) const {
    if (!reference) return true;
    const double shifted = current - delta_;
    return minimise_ ? shifted < *reference : shifted > *reference;
  }

 private:
  std::string name_;
  bool minimise_ = true;
  double delta_ = 0;
};

}  // namespace memopt::callbacks
