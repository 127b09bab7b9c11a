#pragma once
// DepthwiseConv2D on the CPU: oneDNN's grouped convolution, one group per input channel
// (ConvolutionKernel). Keras's [kh, kw, C, m] kernel is oneDNN's hwigo layout as it is.

#include <cstddef>

#include "memopt/backend/cpu/layers/convolution.hpp"
#include "memopt/layers/depthwise_conv2d.hpp"

namespace memopt::cpu_backend {

template <auto K, class... Os, class Spec, std::size_t I>
struct LayerKernel<DepthwiseConv2D<K, Os...>, Spec, I>
    : ConvolutionKernel<DepthwiseConv2D<K, Os...>, Spec, I, Spec::nodes[I].in.channels()> {
  static_assert(I + 1 < Spec::depth,
                "DepthwiseConv2D: cannot be the model's last layer; end with Flatten and Dense");
};

}  // namespace memopt::cpu_backend
