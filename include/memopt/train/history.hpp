#pragma once
// History: what fit() returns, per-epoch logs as Keras's `history.history`.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/error.hpp"

namespace memopt {

/// Logs of one epoch: "loss", "accuracy", "val_loss", "val_accuracy", ...
using Logs = std::map<std::string, double, std::less<>>;

/// Per-epoch values of every logged quantity.
///
/// ```cpp
/// auto h = model.fit(batches, {.epochs = 5});
/// double last_loss = h.history.at("loss").back();
/// ```
struct History {
  std::vector<int> epoch;  // 0-based, as Keras's history.epoch
  std::map<std::string, std::vector<double>, std::less<>> history;

  void append(int e, const Logs& logs) {
    epoch.push_back(e);
    for (const auto& [k, v] : logs) history[k].push_back(v);
  }

  /// The last value of `key`; raises memopt::error naming the keys it has if absent.
  double last(std::string_view key) const {
    const auto it = history.find(key);
    if (it == history.end() || it->second.empty()) {
      std::string keys;
      for (const auto& [k, v] : history) keys += (keys.empty() ? "" : ", ") + k;
      throw error("History::last: no values for \"" + std::string(key) + "\"; have: " + keys);
    }
    return it->second.back();
  }
};

}  // namespace memopt
