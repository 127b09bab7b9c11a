#pragma once
// DeviceControl: the few values a training step keeps on the device so that it never waits
// for the host: the iteration count, the loss scale, the optimizer's options, this step's
// decisions, and the totals of the steps since the host last looked.

#include <cstdint>

namespace memopt::cuda_backend {

/// Optimizer kinds the update kernel knows.
enum class OptimizerKind : std::int32_t { sgd = 0, adam = 1 };

/// What the host uploads when it changes (the user set the iterations or the loss scale, or
/// compiled another optimizer). The device advances `iterations` and the loss scale itself.
struct TrainSettings {
  std::int64_t iterations = 0;
  float scale = 1.0f;
  std::int32_t good_steps = 0;
  std::int32_t growth_interval = 2000;
  std::int32_t dynamic_scale = 0;  // 1 with DynamicLossScale, 0 with NoLossScale
  double learning_rate = 0.0;
  double beta_1 = 0.0;
  double beta_2 = 0.0;
  double epsilon = 0.0;
  double momentum = 0.0;
  std::int32_t nesterov = 0;
  OptimizerKind optimizer = OptimizerKind::sgd;
  std::int32_t slots = 0;  // optimizer state floats per parameter
  std::int32_t reserved = 0;
};

/// This step's decision, written by the gradient check and read by the update.
struct StepDecision {
  float inv_scale = 1.0f;      // 1 / the loss scale the gradients were computed with
  std::int32_t apply = 0;      // 0 when a gradient was not finite: the update is skipped
  float coefficients[4] = {};  // the optimizer's Coefficients for this iteration
};

/// Flags and tickets of the kernels that reduce across blocks; each kernel's last block
/// returns its entries to zero, so they are zero between kernels.
struct Reductions {
  std::uint32_t nonfinite = 0;
  std::uint32_t check_ticket = 0;
  std::uint32_t reduce_ticket = 0;
  std::uint32_t reserved = 0;
};

/// Sums since the host last read them (StepTotals without the sample count, which the host
/// knows).
struct DeviceTotals {
  double loss_sum = 0;
  double correct = 0;
  std::uint64_t skipped_steps = 0;
  std::uint32_t label_errors = 0;  // labels outside [0, outputs) seen by the loss
  std::uint32_t reserved = 0;
};

/// All of it, in one place of device memory.
struct DeviceControl {
  TrainSettings settings;
  StepDecision step;
  Reductions reductions;
  DeviceTotals totals;
};

}  // namespace memopt::cuda_backend
