#pragma once
// DeviceLayout: how the CUDA backend lays a model out on the device. Widths are padded so
// that every leading dimension is a multiple of 16 bytes, as cuBLASLt's fast kernels want;
// the user never sees the padding. Host code only, no CUDA header: tests/unit checks it with
// the host compiler (test_device_layout.cpp).

#include <array>
#include <cstddef>

#include "memopt/plan/step_plans.hpp"

namespace memopt::cuda_backend {

/// Every width on the device is a multiple of this many elements: 16 bytes of 16-bit values
/// (and 32 of float32, so one rule serves every policy).
inline constexpr std::size_t width_multiple = 8;

/// `width` rounded up to `width_multiple`.
///
/// ```cpp
/// static_assert(mo::cuda_backend::padded_width(10) == 16);
/// ```
constexpr std::size_t padded_width(std::size_t width) {
  return (width + width_multiple - 1) / width_multiple * width_multiple;
}

/// `Spec` as the device stores it: each width padded (a `Dense<10>` is 16 wide inside), the
/// parameters in one flat float buffer laid out layer after layer as kernel
/// (`padded units x padded inputs`, column-major) then bias (`padded units`), with zeros in
/// every padding slot, which stay zero through training because their gradients are zero.
/// The plans are the planner's, run on the padded chain.
///
/// ```cpp
/// using L = mo::cuda_backend::DeviceLayout<Spec>;   // 784-128-10
/// static_assert(L::dims[2] == 16 && L::parameter_count == 128 * 784 + 128 + 16 * 128 + 16);
/// ```
template <class Spec>
struct DeviceLayout {
  static constexpr std::size_t depth = Spec::depth;

  /// dims[0] is the padded input width; dims[i + 1] is layer i's padded output width.
  static constexpr std::array<std::size_t, depth + 1> dims = [] {
    std::array<std::size_t, depth + 1> d{};
    for (std::size_t i = 0; i <= depth; ++i) d[i] = padded_width(Spec::dims[i]);
    return d;
  }();

  static constexpr std::size_t kernel_size(std::size_t layer) {
    return dims[layer] * dims[layer + 1];
  }
  static constexpr std::array<std::size_t, depth + 1> parameter_offsets = [] {
    std::array<std::size_t, depth + 1> o{};
    for (std::size_t i = 0; i < depth; ++i) o[i + 1] = o[i] + kernel_size(i) + dims[i + 1];
    return o;
  }();
  static constexpr std::size_t kernel_offset(std::size_t layer) { return parameter_offsets[layer]; }
  static constexpr std::size_t bias_offset(std::size_t layer) {
    return parameter_offsets[layer] + kernel_size(layer);
  }
  /// Floats of the padded parameter buffer: a multiple of 8, so vector loads cover it.
  static constexpr std::size_t parameter_count = parameter_offsets[depth];

  /// The planner's description of the padded chain.
  static constexpr plan::Chain<depth> chain() {
    plan::Chain<depth> c = plan::chain_of<Spec>();
    for (std::size_t i = 0; i <= depth; ++i) c.dims[i] = dims[i];
    return c;
  }

  /// Every buffer of a training step at `batch` rows, placed in one arena: the planner's
  /// buffers and lifetimes for the padded chain, with one change. The loss kernel also writes
  /// the last layer's bias gradient, so the parameter gradients are live from the loss step
  /// on (the planner starts them at the last layer's dW, where the CPU backend computes it).
  static constexpr auto training_plan(std::size_t batch) {
    auto buffers = plan::training_buffers_of(chain(), batch);
    const int loss = plan::training_schedule_of(chain()).index(plan::StepKind::loss);
    for (std::size_t i = 0; i < buffers.count; ++i)
      if (buffers.buffers[i].role == plan::BufferRole::parameter_grads)
        buffers.buffers[i].first = loss;
    return plan::assign_offsets(buffers);
  }
  /// The buffers of a forward pass at `batch` rows (evaluate and predict).
  static constexpr auto inference_plan(std::size_t batch) {
    return plan::inference_plan_of(chain(), batch);
  }

  /// Copies parameters from the user's layout (`Spec`'s) into the device layout, writing
  /// zeros in the padding.
  static void pack(const float* user, float* device) {
    for (std::size_t j = 0; j < parameter_count; ++j) device[j] = 0.0f;
    for (std::size_t i = 0; i < depth; ++i) {
      const std::size_t units = Spec::dims[i + 1], inputs = Spec::dims[i];
      const float* k = user + Spec::kernel_offset(i);
      float* dk = device + kernel_offset(i);
      for (std::size_t c = 0; c < inputs; ++c)
        for (std::size_t u = 0; u < units; ++u) dk[c * dims[i + 1] + u] = k[c * units + u];
      const float* b = user + Spec::bias_offset(i);
      float* db = device + bias_offset(i);
      for (std::size_t u = 0; u < units; ++u) db[u] = b[u];
    }
  }

  /// Copies parameters (or gradients, or one optimizer slot) from the device layout back
  /// into the user's layout.
  static void unpack(const float* device, float* user) {
    for (std::size_t i = 0; i < depth; ++i) {
      const std::size_t units = Spec::dims[i + 1], inputs = Spec::dims[i];
      float* k = user + Spec::kernel_offset(i);
      const float* dk = device + kernel_offset(i);
      for (std::size_t c = 0; c < inputs; ++c)
        for (std::size_t u = 0; u < units; ++u) k[c * units + u] = dk[c * dims[i + 1] + u];
      float* b = user + Spec::bias_offset(i);
      const float* db = device + bias_offset(i);
      for (std::size_t u = 0; u < units; ++u) b[u] = db[u];
    }
  }

  static_assert(parameter_count % width_multiple == 0,
                "DeviceLayout: the padded parameter count must be a multiple of 8");
};

}  // namespace memopt::cuda_backend
