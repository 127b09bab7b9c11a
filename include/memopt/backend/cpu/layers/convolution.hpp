#pragma once
// ConvolutionKernel: the CPU kernel of a layer that is one oneDNN convolution (Conv2D, and
// DepthwiseConv2D as a convolution of one group per input channel): the bias, and a ReLU,
// fused into the primitive; a pass over the output then keeps ReLU's mask (or applies another
// activation). The layer gives its kernel window, strides and padding; the node its shapes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cpu/dnnl/conv2d.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"

namespace memopt::cpu_backend {

/// `Groups` splits the input channels and the filters as Conv2dShape::groups does: 1 for
/// Conv2D, the input's channels for DepthwiseConv2D.
template <class L, class Spec, std::size_t I, std::size_t Groups>
struct ConvolutionKernel {
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr Shape out = Spec::nodes[I].out;
  static constexpr std::size_t kernel_size = L::weights(in)[0].size();
  static constexpr ActivationKind act = kernel_activation<Spec, I>(L::activation::kind);

  static onednn::Conv2dShape shape(std::size_t rows) {
    return {.batch = static_cast<std::int64_t>(rows),
            .height = static_cast<std::int64_t>(in.height()),
            .width = static_cast<std::int64_t>(in.width()),
            .in_channels = static_cast<std::int64_t>(in.channels()),
            .filters = static_cast<std::int64_t>(out.channels()),
            .kernel_h = static_cast<std::int64_t>(L::kernel.h),
            .kernel_w = static_cast<std::int64_t>(L::kernel.w),
            .stride_h = static_cast<std::int64_t>(L::strides.h),
            .stride_w = static_cast<std::int64_t>(L::strides.w),
            .padding = L::padding,
            .relu = act == ActivationKind::relu,
            .groups = static_cast<std::int64_t>(Groups)};
  }

  void prepare(std::size_t rows) {
    conv_.select(rows, [](std::size_t r) { return onednn::Conv2d<T>(shape(r)); });
  }
  /// oneDNN's scratchpad, or the float copy of the output that an activation other than the
  /// ReLU fused into the convolution passes through under 16-bit policies.
  std::size_t scratch_bytes(std::size_t rows) const {
    const bool epilogue =
        !std::is_same_v<T, float> && act != ActivationKind::relu && act != ActivationKind::linear;
    return std::max(conv_->scratchpad_bytes(), epilogue ? out.size() * rows * sizeof(float) : 0);
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    conv_->forward(io.x, io.weights, io.params + kernel_size, io.y, io.scratch);
    if constexpr (act == ActivationKind::relu)
      relu_mask_of_output(out.size(), io);
    else
      activation_epilogue<act>(out.channels(), out.size(), io);
  }
  void weight_grad(const BackwardIo<T>& io) {
    conv_->backward_weights(io.x, io.dy, io.grads, io.grads + kernel_size, io.scratch);
  }
  void input_grad(const BackwardIo<T>& io) {
    conv_->backward_data(io.dy, io.weights, io.dx, io.scratch);
    apply_activation_grad(io);
  }

 private:
  PerBatch<onednn::Conv2d<T>> conv_;
};

}  // namespace memopt::cpu_backend
