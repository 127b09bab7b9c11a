#pragma once
// Dynamic loss scaling, with Keras's LossScaleOptimizer behaviour, shared by every backend.

#include <cstdint>

#include "memopt/core/host_device.hpp"

namespace memopt {

/// Starts at 2^15; doubles after `growth_interval` consecutive finite steps; on a
/// non-finite gradient halves and reports that the update must be skipped.
///
/// ```cpp
/// mo::DynamicLossScale s;
/// s.update(false);   // returns false: skip this step; s.value() == 16384
/// ```
struct DynamicLossScale {
  float scale = 32768.0f;
  std::int32_t good_steps = 0;
  std::int32_t growth_interval = 2000;

  MEMOPT_HD float value() const { return scale; }

  /// Records a step; returns whether its update may be applied.
  MEMOPT_HD bool update(bool finite) {
    if (!finite) {
      scale *= 0.5f;
      good_steps = 0;
      return false;
    }
    if (++good_steps >= growth_interval) {
      scale *= 2.0f;
      good_steps = 0;
    }
    return true;
  }
};

/// No scaling (float32 and bfloat16 policies): a step is applied when its gradients are
/// finite.
struct NoLossScale {
  MEMOPT_HD float value() const { return 1.0f; }
  MEMOPT_HD bool update(bool finite) { return finite; }
};

}  // namespace memopt
