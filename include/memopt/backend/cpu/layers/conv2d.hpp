#pragma once
// Conv2D on the CPU: one oneDNN convolution (ConvolutionKernel).

#include <cstddef>

#include "memopt/backend/cpu/layers/convolution.hpp"
#include "memopt/layers/conv2d.hpp"

namespace memopt::cpu_backend {

template <std::size_t F, auto K, class... Os, class Spec, std::size_t I>
struct LayerKernel<Conv2D<F, K, Os...>, Spec, I>
    : ConvolutionKernel<Conv2D<F, K, Os...>, Spec, I, 1> {
  static_assert(I + 1 < Spec::depth,
                "Conv2D: cannot be the model's last layer; end with Flatten and Dense");
};

}  // namespace memopt::cpu_backend
