#pragma once
// Metrics the fused loss kernels count as they go.

#include <string_view>

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
