#pragma once
// Metrics the fused loss kernels count as they go, and (through the includes below) every
// streaming metric in memopt/train/metrics/.

#include <string_view>

#include "memopt/train/metrics/auc.hpp"
#include "memopt/train/metrics/mean_absolute_error.hpp"
#include "memopt/train/metrics/mean_squared_error.hpp"
#include "memopt/train/metrics/precision.hpp"
#include "memopt/train/metrics/recall.hpp"
#include "memopt/train/metrics/sparse_top_k_categorical_accuracy.hpp"
#include "memopt/train/metrics/top_k_categorical_accuracy.hpp"

namespace memopt::metrics {

/// Keras's `accuracy` for sparse labels: the fraction of rows whose largest output is the
/// label. Counted inside the loss kernel, so it costs no extra pass.
///
/// ```cpp
/// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
/// ```
struct Accuracy {
  static constexpr std::string_view name = "accuracy";
};

}  // namespace memopt::metrics
