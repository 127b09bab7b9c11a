#pragma once
// SeparableConv2D on the CPU: two oneDNN convolutions, the depthwise one (one group per input
// channel, no bias) into the layer's middle tensor, then the pointwise 1x1 one with the bias,
// and a ReLU, fused. The middle tensor is the plan's saved buffer when backward reads it, else
// scratch. Backward: the pointwise kernel's gradient from the middle tensor and dy; the middle
// tensor's gradient (a 1x1 backward-data pass, cheap beside the rest) is computed in scratch
// by the weight gradient for the depthwise kernel's gradient, and again by the input gradient,
// so that no buffer holds it between the two steps.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cpu/dnnl/conv2d.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
#include "memopt/layers/separable_conv2d.hpp"

namespace memopt::cpu_backend {

template <std::size_t F, auto K, class... Os, class Spec, std::size_t I>
struct LayerKernel<SeparableConv2D<F, K, Os...>, Spec, I> {
  using L = SeparableConv2D<F, K, Os...>;
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr Shape mid = L::middle_shape(in);
  static constexpr Shape out = Spec::nodes[I].out;
  static constexpr std::size_t depthwise_size = L::weights(in)[0].size();
  static constexpr std::size_t pointwise_size = L::weights(in)[1].size();
  static constexpr ActivationKind act = kernel_activation<Spec, I>(L::activation::kind);
  static_assert(I + 1 < Spec::depth,
                "SeparableConv2D: cannot be the model's last layer; end with Flatten and Dense");

  static onednn::Conv2dShape depthwise_shape(std::size_t rows) {
    return {.batch = static_cast<std::int64_t>(rows),
            .height = static_cast<std::int64_t>(in.height()),
            .width = static_cast<std::int64_t>(in.width()),
            .in_channels = static_cast<std::int64_t>(in.channels()),
            .filters = static_cast<std::int64_t>(mid.channels()),
            .kernel_h = static_cast<std::int64_t>(L::kernel.h),
            .kernel_w = static_cast<std::int64_t>(L::kernel.w),
            .stride_h = static_cast<std::int64_t>(L::strides.h),
            .stride_w = static_cast<std::int64_t>(L::strides.w),
            .padding = L::padding,
            .bias = false,
            .groups = static_cast<std::int64_t>(in.channels())};
  }
  static onednn::Conv2dShape pointwise_shape(std::size_t rows) {
    return {.batch = static_cast<std::int64_t>(rows),
            .height = static_cast<std::int64_t>(mid.height()),
            .width = static_cast<std::int64_t>(mid.width()),
            .in_channels = static_cast<std::int64_t>(mid.channels()),
            .filters = static_cast<std::int64_t>(F),
            .relu = act == ActivationKind::relu};
  }

  void prepare(std::size_t rows) {
    depthwise_.select(rows, [](std::size_t r) { return onednn::Conv2d<T>(depthwise_shape(r)); });
    pointwise_.select(rows, [](std::size_t r) { return onednn::Conv2d<T>(pointwise_shape(r)); });
  }
  /// [the convolutions' scratchpad, or the epilogue's float copy | the middle tensor or its
  /// gradient, `rows` of them].
  std::size_t scratch_bytes(std::size_t rows) const {
    return middle_at(rows) + rows * mid.size() * sizeof(T);
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    T* middle =
        io.saved[0] ? reinterpret_cast<T*>(io.saved[0]) : middle_scratch(io.scratch, io.rows);
    depthwise_->forward(io.x, io.weights, nullptr, middle, io.scratch);
    pointwise_->forward(middle, io.weights + depthwise_size,
                        io.params + depthwise_size + pointwise_size, io.y, io.scratch);
    if constexpr (act == ActivationKind::relu)
      relu_mask_of_output(out.size(), io);
    else
      activation_epilogue<act>(F, out.size(), io);
  }
  void weight_grad(const BackwardIo<T>& io) {
    const T* middle = reinterpret_cast<const T*>(io.saved[0]);
    pointwise_->backward_weights(middle, io.dy, io.grads + depthwise_size,
                                 io.grads + depthwise_size + pointwise_size, io.scratch);
    T* dmiddle = middle_scratch(io.scratch, io.rows);
    pointwise_->backward_data(io.dy, io.weights + depthwise_size, dmiddle, io.scratch);
    depthwise_->backward_weights(io.x, dmiddle, io.grads, nullptr, io.scratch);
  }
  void input_grad(const BackwardIo<T>& io) {
    T* dmiddle = middle_scratch(io.scratch, io.rows);
    pointwise_->backward_data(io.dy, io.weights + depthwise_size, dmiddle, io.scratch);
    depthwise_->backward_data(dmiddle, io.weights, io.dx, io.scratch);
    apply_activation_grad(io);
  }

 private:
  // Where the middle tensor (or its gradient) starts in the scratch: past the convolutions'
  // scratchpads and the epilogue's float copy, 64-byte aligned.
  std::size_t middle_at(std::size_t rows) const {
    const bool epilogue =
        !std::is_same_v<T, float> && act != ActivationKind::relu && act != ActivationKind::linear;
    const std::size_t below =
        std::max({depthwise_->scratchpad_bytes(), pointwise_->scratchpad_bytes(),
                  epilogue ? out.size() * rows * sizeof(float) : std::size_t{0}});
    return (below + 63) / 64 * 64;
  }
  T* middle_scratch(float* scratch, std::size_t rows) const {
    return reinterpret_cast<T*>(reinterpret_cast<std::byte*>(scratch) + middle_at(rows));
  }

  PerBatch<onednn::Conv2d<T>> depthwise_, pointwise_;
};

}  // namespace memopt::cpu_backend
